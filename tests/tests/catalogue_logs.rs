//! A worker that runs only some of the jobs of a queue it serves says so at start: those
//! linked into its binary but left out by `.jobs([...])` (even as the first worker up, with
//! nothing in the catalogue yet), and those other workers published for that queue.
//!
//! One test in a binary of its own, under a global subscriber: a subscriber set for one thread
//! of a test binary whose other tests hit the same log line at the same moment can miss it
//! (`tracing` caches per call site whether anyone listens).

use gator_core::{Client, job};
use gator_tests::{RedisServer, catalogued, wait_until};
use gator_worker::{CancellationToken, Worker};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

#[job(queue = "shared")]
async fn left_job(_n: u64) {}

#[job(queue = "shared")]
async fn right_job(_n: u64) {}

const SAID: &str = "runs only some of the jobs on this queue";

/// Everything the process logs, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn hear() -> Captured {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        captured
    }

    /// Forgets what was logged so far.
    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }

    /// The lines saying a worker runs only some of a queue's jobs, once one is there.
    async fn start_messages(&self) -> Vec<String> {
        let text = || String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned();
        wait_until("the start message", Duration::from_secs(10), || async {
            text().contains(SAID)
        })
        .await;
        text()
            .lines()
            .filter(|l| l.contains(SAID))
            .map(str::to_owned)
            .collect()
    }
}

fn worker(
    client: &Client,
    jobs: &[&str],
) -> (CancellationToken, JoinHandle<gator_core::Result<()>>) {
    let worker = Worker::builder()
        .client(client.clone())
        .queues("shared")
        .jobs(jobs.iter().copied())
        .build()
        .expect("a valid worker");
    let stop = CancellationToken::new();
    (stop.clone(), tokio::spawn(worker.run_until(stop)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_runs_only_some_jobs_of_a_queue_says_so_at_start() {
    let captured = Captured::hear();

    // The first worker up, nothing in the catalogue: the jobs linked but left out.
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    let (stop, running) = worker(&client, &["left_job"]);
    catalogued(&client, "left_job").await;
    let said = captured.start_messages().await;
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("queue=shared") && said[0].contains("right_job"),
        "{said:?}"
    );
    assert!(!said[0].contains("left_job"), "{said:?}");
    stop.cancel();
    running.await.unwrap().unwrap();

    // Beside a worker that published its job for the queue: the second says it leaves that
    // job (the first, which said it leaves `left_job`, has said so before the log is cleared).
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    captured.clear();
    let (stop_right, right) = worker(&client, &["right_job"]);
    catalogued(&client, "right_job").await;
    let said = captured.start_messages().await;
    assert!(said.iter().all(|l| l.contains("left_job")), "{said:?}");
    captured.clear();
    let (stop_left, left) = worker(&client, &["left_job"]);
    catalogued(&client, "left_job").await;
    let said = captured.start_messages().await;
    assert!(
        said.iter()
            .all(|l| l.contains("right_job") && !l.contains("left_job")),
        "{said:?}"
    );
    stop_left.cancel();
    stop_right.cancel();
    left.await.unwrap().unwrap();
    right.await.unwrap().unwrap();
}
