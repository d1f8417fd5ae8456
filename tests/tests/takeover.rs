//! A worker restarted without a `--worker-id` takes back at once the jobs of an earlier process
//! it can prove dead: one with this process's pid, in this PID namespace, on this boot of the
//! kernel (that pid is this process's now, so the other has exited). Any other process's jobs
//! wait for its lease, whatever its host name (`gator_worker::identity`).

use gator_core::job;
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::sync::Mutex;
use std::time::Duration;

static RAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

#[job(queue = "takeover")]
async fn mark(n: u64) {
    RAN.lock().unwrap().push(n);
}

/// Puts the queue's head job in `process`'s in-flight list, under a lease live for 10 minutes
/// (Redis time), as a process that fetched it and then died would leave it.
fn held_by(redis: &RedisServer, process: &str) {
    let now_s: u64 = redis
        .cli(&["TIME"])
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let expiry = (now_s + 600) * 1000;
    let inflight = format!("gator:{{takeover}}:inflight:{process}");
    assert!(
        !redis
            .cli(&[
                "LMOVE",
                "gator:{takeover}:queue",
                &inflight,
                "LEFT",
                "RIGHT"
            ])
            .is_empty()
    );
    redis.cli(&[
        "ZADD",
        "gator:{takeover}:leases",
        &expiry.to_string(),
        process,
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_predecessor_with_this_pid_in_this_namespace_is_taken_over_at_start() {
    let prefix = gator_worker::identity::take_over_prefix(None)
        .expect("Linux gives a boot id and a PID namespace");
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    Mark::call(1).through(&client).dispatch().await.unwrap();
    Mark::call(2).through(&client).dispatch().await.unwrap();
    // Job 1: held by an earlier process with this pid here: it has exited.
    held_by(&redis, &format!("{prefix}:dead01"));
    // Job 2: held by a process with another pid: it may be alive, so its lease holds.
    let pid = std::process::id();
    let other = prefix.replacen(&format!(":{pid}:"), &format!(":{}:", pid + 1), 1);
    held_by(&redis, &format!("{other}:beef01"));

    let worker = TestWorker::start(&redis.url(), Some("takeover"), 2);
    wait_until(
        "the dead predecessor's job to run",
        Duration::from_secs(10),
        || async { RAN.lock().unwrap().contains(&1) },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        *RAN.lock().unwrap(),
        [1],
        "the other process's job waits for its lease"
    );
    let held = redis.cli(&[
        "LLEN",
        &format!("gator:{{takeover}}:inflight:{other}:beef01"),
    ]);
    assert_eq!(held, "1");
    worker.stop().await;
}

static RELEASED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs until the test lets it go, then marks.
#[job(queue = "takeover-busy")]
async fn busy(n: u64) {
    while !RELEASED.load(std::sync::atomic::Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    RAN.lock().unwrap().push(n);
}

/// An app may start two workers in one process: they share its pid, and each is alive. The
/// second one's start must not take the first one's job in flight: it would run twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_worker_in_the_same_process_leaves_the_first_ones_jobs_in_flight() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    Busy::call(7).through(&client).dispatch().await.unwrap();
    let first = TestWorker::start(&redis.url(), Some("takeover-busy"), 1);
    let inflight = || redis.cli(&["KEYS", "gator:{takeover-busy}:inflight:*"]);
    wait_until(
        "the first worker to run the job",
        Duration::from_secs(10),
        || async { !inflight().trim().is_empty() },
    )
    .await;
    // Its start's recovery pass (which takes over proven-dead predecessors) runs before it
    // takes its lease and fetches.
    let second = TestWorker::start(&redis.url(), Some("takeover"), 1);
    wait_until(
        "the second worker to start",
        Duration::from_secs(10),
        || async { redis.cli(&["EXISTS", "gator:{takeover}:leases"]).trim() == "1" },
    )
    .await;
    let list = inflight();
    assert_eq!(
        redis.cli(&["LLEN", list.trim()]).trim(),
        "1",
        "taken from a live worker"
    );
    assert_eq!(
        redis.cli(&["LLEN", "gator:{takeover-busy}:queue"]).trim(),
        "0"
    );
    RELEASED.store(true, std::sync::atomic::Ordering::SeqCst);
    wait_until("the job to finish", Duration::from_secs(10), || async {
        RAN.lock().unwrap().contains(&7)
    })
    .await;
    second.stop().await;
    first.stop().await;
    assert_eq!(*RAN.lock().unwrap(), [7], "it ran once");
}
