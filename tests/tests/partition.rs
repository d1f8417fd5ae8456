//! A worker cut off from Redis for longer than its lease (a network partition, made real by a
//! proxy that forwards nothing, on open connections and new ones alike): the rest of the fleet
//! runs its job again once the lease has expired, and when the partition heals the cut-off
//! worker drops the outcome it kept, and its log says why. A job runs twice only if its process
//! died or was cut off past its lease; this is the second case, measured.

use gator_core::{JobStatus, job};
use gator_tests::{RedisServer, SilentProxy, WorkerCommand, client, terminate, wait_until};
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");
const QUEUE: &str = "partition";

/// The test worker binary's `sleepy`: counts a run in `test:runs` as it starts, then sleeps.
#[job(name = "sleepy")]
async fn sleepy(_id: u64, _millis: u64) {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_cut_off_past_its_lease_drops_its_kept_outcome_and_says_why() {
    let redis = RedisServer::start_single();
    let proxy = SilentProxy::start(redis.port());
    let client = client(&redis.url()).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cut-off.log");
    let mut cut_off = WorkerCommand::new(WORKER, &proxy.url(), QUEUE)
        .args(&["--lease", "4s", "--concurrency", "1"])
        .log_to(&log)
        .spawn();
    let jid = Sleepy::call(1, 3000)
        .queue(QUEUE)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let runs = || async {
        let runs: Option<u64> = redis::cmd("HGET")
            .arg("test:runs")
            .arg(1)
            .query_async(&mut client.connection())
            .await
            .unwrap();
        runs.unwrap_or(0)
    };
    wait_until(
        "the cut-off worker to start the job",
        Duration::from_secs(20),
        || async { runs().await == 1 },
    )
    .await;

    // The partition: the job finishes in the cut-off worker, which cannot record it.
    proxy.cut();
    let mut other = WorkerCommand::new(WORKER, &redis.url(), QUEUE)
        .args(&["--lease", "4s"])
        .spawn();
    wait_until(
        "the job run again and done elsewhere once the lease expired",
        Duration::from_secs(30),
        || async { client.status(&jid).await.unwrap().is_final() },
    )
    .await;
    proxy.heal();

    let read = || strip_ansi(&std::fs::read_to_string(&log).unwrap_or_default());
    wait_until(
        "the cut-off worker to say it dropped the outcome",
        Duration::from_secs(30),
        || async { read().contains("outcomes dropped") },
    )
    .await;
    let text = read();
    let dropped: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("outcomes dropped"))
        .collect();
    assert_eq!(dropped.len(), 1, "one line for one outcome:\n{text}");
    assert!(
        dropped[0].contains(&format!("queue={QUEUE}")) && dropped[0].contains("jobs=1"),
        "{}",
        dropped[0]
    );
    assert!(
        dropped[0].contains("lease on the queue ran out"),
        "the line says why: {}",
        dropped[0]
    );
    // Ran twice, as promised for a worker cut off past its lease, and done once.
    assert_eq!(runs().await, 2);
    match client.status(&jid).await.unwrap() {
        JobStatus::Done { attempts, .. } => assert_eq!(attempts, 1, "a partition is no failure"),
        other => panic!("expected done, got {other:?}"),
    }
    assert!(terminate(&mut cut_off.0).success());
    assert!(terminate(&mut other.0).success());
}

/// `text` without terminal colour codes (`ESC [ … m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
