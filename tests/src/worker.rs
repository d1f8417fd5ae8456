//! An in-process worker for tests: started on a private Redis, stopped like SIGTERM would.

use gator_core::Client;
use gator_worker::{QueueSelection, WorkerConfig};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running [`gator_worker::Worker`] inside the test process.
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
        let handle = tokio::spawn(
            gator_worker::WorkerBuilder::from_config(config)
                .build()
                .expect("a valid worker")
                .run_until(stop.clone()),
        );
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

/// Writes flow-control `settings` for `queue` (making it controlled), as the CLI does.
pub async fn set_flow(client: &Client, queue: &str, settings: &[gator_core::flow::FlowSetting]) {
    gator_core::Admin::new(client.clone())
        .set_queue_flow(queue, settings)
        .await
        .expect("flow settings are written");
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

/// How a worker process is started: its command line, and what runs it (a skewed clock, a PID
/// namespace of its own), with its log kept for the test to read.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    binary: String,
    args: Vec<String>,
    clock_offset: Option<String>,
    own_pid_namespace: bool,
    log: Option<std::path::PathBuf>,
    log_level: String,
}

impl WorkerCommand {
    /// The worker `binary` on `redis_url`, serving `queues`, with the `warn` log level.
    pub fn new(binary: &str, redis_url: &str, queues: &str) -> WorkerCommand {
        WorkerCommand {
            binary: binary.to_owned(),
            args: ["--redis-url", redis_url, "--queues", queues]
                .map(String::from)
                .to_vec(),
            clock_offset: None,
            own_pid_namespace: false,
            log: None,
            log_level: "warn".to_owned(),
        }
    }

    /// Its log level (`RUST_LOG`): `warn` unless set.
    pub fn log_level(mut self, level: &str) -> WorkerCommand {
        self.log_level = level.to_owned();
        self
    }

    /// More command-line arguments (`--concurrency`, `--lease`, `--worker-id`, ...).
    pub fn args(mut self, args: &[&str]) -> WorkerCommand {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// Runs the worker with its clock `offset` off (`"+5m"`, `"-90s"`, `"+181d"`), through
    /// libfaketime (Debian's `faketime`): every clock the process reads is off, not just
    /// Gator's.
    pub fn clock_offset(mut self, offset: &str) -> WorkerCommand {
        self.clock_offset = Some(offset.to_owned());
        self
    }

    /// Runs the worker in a PID namespace of its own (`unshare --pid --fork --mount-proc`),
    /// as in a container: it sees its own `/proc`, and is pid 1 (see
    /// [`WorkerCommand::spawn_after`] for another pid). SIGKILL it to stop it: pid 1 ignores
    /// SIGTERM. See [`pid_namespaces_available`].
    pub fn own_pid_namespace(mut self) -> WorkerCommand {
        self.own_pid_namespace = true;
        self
    }

    /// Appends the worker's stderr to `path` instead of the test's stderr.
    pub fn log_to(mut self, path: &std::path::Path) -> WorkerCommand {
        self.log = Some(path.to_owned());
        self
    }

    /// Starts it.
    ///
    /// # Panics
    /// If it cannot be started, or `faketime` is missing for a clock offset.
    pub fn spawn(&self) -> WorkerProcess {
        self.spawn_after(0)
    }

    /// Starts it after `pids_before` short-lived processes in its PID namespace (with
    /// [`WorkerCommand::own_pid_namespace`]), so two namespaced workers get different pids.
    pub fn spawn_after(&self, pids_before: usize) -> WorkerProcess {
        let mut program: Vec<String> = Vec::new();
        if self.own_pid_namespace {
            program.extend(
                ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"].map(String::from),
            );
        }
        let faketime = self
            .clock_offset
            .as_ref()
            .map(|offset| (libfaketime(), offset));
        program.push(self.binary.clone());
        program.extend(self.args.iter().cloned());
        let mut command = if self.own_pid_namespace && pids_before > 0 {
            // `sh` is pid 1 and `true` takes the next pids, so the worker's pid is
            // `pids_before + 2`. Killing `unshare` kills them all (`--kill-child`).
            let script = format!("{}\"$@\" & wait", "true & wait; ".repeat(pids_before));
            let (unshare, rest) = program.split_at(5);
            let mut c = Command::new(&unshare[0]);
            c.args(&unshare[1..])
                .args(["sh", "-c", &script, "sh"])
                .args(rest);
            c
        } else {
            let mut c = Command::new(&program[0]);
            c.args(&program[1..]);
            c
        };
        if let Some((library, offset)) = faketime {
            // The library itself rather than the `faketime` wrapper, which forks: killing the
            // wrapper would leave the worker running.
            command
                .env("LD_PRELOAD", library)
                .env("FAKETIME", offset)
                .env("FAKETIME_DONT_RESET", "1");
        }
        command
            .env("RUST_LOG", &self.log_level)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        match &self.log {
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap_or_else(|e| panic!("opening the worker log {}: {e}", path.display()));
                command.stderr(file);
            }
            None => {
                command.stderr(Stdio::inherit());
            }
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {:?}: {e}", program));
        WorkerProcess(child)
    }
}

/// The multi-threaded libfaketime that `faketime` installs (Debian puts it under
/// `/usr/lib/<arch>/faketime/`).
///
/// # Panics
/// If it is not installed, with the command that installs it.
pub fn libfaketime() -> std::path::PathBuf {
    let found = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|dir| dir.path().join("faketime/libfaketimeMT.so.1"))
        .chain([std::path::PathBuf::from(
            "/usr/lib/faketime/libfaketimeMT.so.1",
        )])
        .find(|path| path.exists());
    found.unwrap_or_else(|| {
        panic!(
            "libfaketime is not installed: `sudo apt-get install -y faketime`, or run scripts/test, which installs it"
        )
    })
}

/// Whether this machine lets a test start a process in a PID namespace of its own
/// (`unshare --pid`, which needs root or user namespaces); if not, the reason.
pub fn pid_namespaces_available() -> Result<(), String> {
    match Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`unshare --pid --fork --mount-proc true` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("`unshare` cannot be run: {e}")),
    }
}

/// Runs the worker `binary` as the CLI (`gator-worker --redis-url URL ARGS...`), waits for it,
/// and echoes the command and its output on the test's stderr.
pub fn run_cli(binary: &str, redis_url: &str, args: &[&str]) -> std::process::Output {
    let output = Command::new(binary)
        .args(["--redis-url", redis_url])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {binary}: {e}"));
    eprintln!(
        "$ gator-worker {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Waits (up to 10 s) until a worker has published job `name` in the job catalogue, so that a
/// dispatch by name (the HTTP API, `dispatch_by_name`) finds it.
pub async fn catalogued(client: &Client, name: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while client
        .catalogue_entry(name)
        .await
        .expect("read the catalogue")
        .is_none()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no worker published {name:?} in the job catalogue within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
