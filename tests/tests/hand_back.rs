//! A worker hands back a job it does not run, which another live worker runs from the same
//! queue: to the head of the queue, at once, never parked, and it passes over that job from
//! then on, so the job waits in place and starts as soon as a worker that runs it is free.

use gator_core::{Client, JobStatus, job};
use gator_tests::{RedisServer, wait_until};
use gator_worker::{CancellationToken, Worker};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// When each right-hand job started, by its argument.
static STARTED: Mutex<Vec<(u64, Instant)>> = Mutex::new(Vec::new());
/// Holds the blocker until the test lets it go.
static RELEASE: AtomicBool = AtomicBool::new(false);

/// Runs until the test releases it: it keeps the only processor of the worker that runs it.
#[job(queue = "handback")]
async fn blocker() {
    STARTED.lock().unwrap().push((0, Instant::now()));
    while !RELEASE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[job(queue = "handback")]
async fn right_job(n: u64) {
    STARTED.lock().unwrap().push((n, Instant::now()));
}

#[job(queue = "handback")]
async fn left_job(n: u64) {
    let _ = n;
}

/// A worker of `jobs` on the queue, with `concurrency` processors.
fn worker(
    client: &Client,
    jobs: &[&str],
    concurrency: usize,
) -> (CancellationToken, JoinHandle<gator_core::Result<()>>) {
    let worker = Worker::builder()
        .client(client.clone())
        .queues("handback")
        .concurrency(concurrency)
        .poll_interval(Duration::from_millis(100))
        .jobs(jobs.iter().copied())
        .build()
        .expect("a valid worker");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    (stop, running)
}

fn started(n: u64) -> Option<Instant> {
    STARTED
        .lock()
        .unwrap()
        .iter()
        .find(|(m, _)| *m == n)
        .map(|(_, at)| *at)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_handed_back_waits_at_the_head_of_its_queue_for_a_worker_that_runs_it() {
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    // One processor runs the right-hand jobs; four idle ones run only the left-hand job.
    let (stop_runner, runner) = worker(&client, &["blocker", "right_job"], 1);
    let (stop_other, other) = worker(&client, &["left_job"], 4);
    for name in ["blocker", "right_job", "left_job"] {
        wait_until(
            "the job in the catalogue",
            Duration::from_secs(10),
            || async { client.catalogue_entry(name).await.unwrap().is_some() },
        )
        .await;
    }
    Blocker::call().through(&client).dispatch().await.unwrap();
    wait_until("the blocker to run", Duration::from_secs(10), || async {
        started(0).is_some()
    })
    .await;

    // The runner is busy: the other worker's idle processors fetch the job, and hand it back.
    let jid = RightJob::call(1).through(&client).dispatch().await.unwrap();
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_millis(1500) {
        let status = client.status(&jid).await.unwrap();
        assert!(
            matches!(status, JobStatus::Queued | JobStatus::Running { .. }),
            "handed back, not parked: {status:?}"
        );
        assert_eq!(
            redis.cli(&["ZCARD", "gator:{handback}:scheduled"]),
            "0",
            "nothing parked in the scheduled set"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(started(1), None, "only the busy runner runs it");
    let head = redis.cli(&["LINDEX", "gator:{handback}:queue", "0"]);
    let payload: serde_json::Value = serde_json::from_str(&head).expect("a job at the head");
    assert_eq!(
        payload["jid"],
        jid.as_str(),
        "it waits at the head of its queue"
    );

    // Its runner free, it starts at once: the success that frees the processor takes it.
    let freed = Instant::now();
    RELEASE.store(true, Ordering::SeqCst);
    wait_until("the job to run", Duration::from_secs(5), || async {
        started(1).is_some()
    })
    .await;
    let latency = started(1).unwrap().saturating_duration_since(freed);
    eprintln!("the handed-back job started {latency:?} after its runner was free");
    wait_until("the job done", Duration::from_secs(5), || async {
        matches!(
            client.status(&jid).await.unwrap(),
            JobStatus::Done { attempts: 1, .. }
        )
    })
    .await;
    stop_runner.cancel();
    stop_other.cancel();
    runner.await.unwrap().unwrap();
    other.await.unwrap().unwrap();
}
