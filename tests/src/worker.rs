//! An in-process worker for tests: started on a private Redis, stopped like SIGTERM would.

use gator_core::Client;
use gator_worker::{QueueSelection, Worker, WorkerConfig};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running [`Worker`] inside the test process.
#[derive(Debug)]
pub struct TestWorker {
    stop: CancellationToken,
    handle: JoinHandle<gator_core::Result<()>>,
}

impl TestWorker {
    /// Starts a worker on `redis_url` serving `queues` (`None`: every known queue) with
    /// `concurrency` processors and a fast poller.
    pub fn start(redis_url: &str, queues: Option<&str>, concurrency: usize) -> TestWorker {
        let mut config = WorkerConfig::new(redis_url);
        config.queues = match queues {
            Some(spec) => spec
                .parse::<QueueSelection>()
                .expect("a valid --queues spec"),
            None => QueueSelection::AllKnown,
        };
        config.concurrency = concurrency;
        config.poll_interval = Duration::from_millis(100);
        TestWorker::start_with(config)
    }

    /// Starts a worker with a config of the test's making.
    pub fn start_with(config: WorkerConfig) -> TestWorker {
        let stop = CancellationToken::new();
        let handle = tokio::spawn(Worker::new(config).run_until(stop.clone()));
        TestWorker { stop, handle }
    }

    /// Asks the worker to stop (as SIGTERM does) and waits until it has.
    pub async fn stop(self) {
        self.stop.cancel();
        self.handle
            .await
            .expect("the worker task panicked")
            .expect("the worker failed");
    }
}

/// A client of the private Redis at `url` (tests never rely on the process-wide default,
/// which parallel tests would fight over).
pub async fn client(url: &str) -> Client {
    Client::connect(url)
        .await
        .expect("connect to the test redis")
}

/// A worker process that is SIGKILLed when dropped, so a failing test leaves none behind.
#[derive(Debug)]
pub struct WorkerProcess(pub Child);

impl std::ops::Deref for WorkerProcess {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for WorkerProcess {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill(); // Err only means it already exited.
        let _ = self.0.wait();
    }
}

/// Starts a worker binary as its own process (tests pass `env!("CARGO_BIN_EXE_gator-test-worker")`,
/// which only integration tests can name) on `redis_url`, serving `queues` with `concurrency`
/// processors, its warnings on the test's stderr.
pub fn spawn_worker_process(
    binary: &str,
    redis_url: &str,
    queues: &str,
    concurrency: u16,
) -> WorkerProcess {
    spawn_worker_process_with(binary, redis_url, queues, concurrency, &[])
}

/// [`spawn_worker_process`] with more command-line arguments (`--lease`, `--worker-id`, ...).
pub fn spawn_worker_process_with(
    binary: &str,
    redis_url: &str,
    queues: &str,
    concurrency: u16,
    extra: &[&str],
) -> WorkerProcess {
    let child = Command::new(binary)
        .args([
            "--redis-url",
            redis_url,
            "--queues",
            queues,
            "--concurrency",
            &concurrency.to_string(),
        ])
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting the worker binary {binary}: {e}"));
    WorkerProcess(child)
}

/// Sends SIGTERM to a worker process (as an init system would) and waits for it to exit.
pub fn terminate(child: &mut Child) -> ExitStatus {
    let pid = child.id();
    assert!(
        crate::signal("-TERM", pid),
        "could not send SIGTERM to {pid}"
    );
    child.wait().expect("wait for the worker process")
}
