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
