//! A Redis outage is logged once when it starts, summed up while it lasts, and once when it
//! ends, not once per processor per queue per retry (a worker with 8 processors on 3 queues
//! logged about 24 WARN lines a second).

use gator_tests::{RedisServer, signal};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

#[test]
fn an_outage_is_logged_when_it_starts_while_it_lasts_and_when_it_ends() {
    let mut redis = RedisServer::start_single();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut worker = Command::new(WORKER)
        .args([
            "--redis-url",
            &redis.url(),
            "--queues",
            "a,b,c",
            "--concurrency",
            "8",
        ])
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(log.path()).unwrap();
    wait(
        || read().contains("worker started"),
        "the worker to start",
        &read,
    );

    redis.stop();
    std::thread::sleep(Duration::from_secs(12));
    redis.restart();
    wait(
        || read().contains("Redis is reachable again"),
        "the end of the outage",
        &read,
    );
    assert!(signal("-TERM", worker.id()));
    let _ = worker.wait();

    let text = read();
    let warns: Vec<&str> = text.lines().filter(|l| l.contains("WARN")).collect();
    let outage: Vec<&str> = warns
        .iter()
        .copied()
        .filter(|l| l.contains("Redis is unreachable"))
        .collect();
    assert_eq!(outage.len(), 1, "one line as it starts:\n{text}");
    let summaries = warns
        .iter()
        .filter(|l| l.contains("Redis is still unreachable"))
        .count();
    assert!(
        (1..=2).contains(&summaries),
        "a summary every 10 s:\n{text}"
    );
    let ended = text
        .lines()
        .filter(|l| l.contains("Redis is reachable again"))
        .count();
    assert_eq!(ended, 1, "{text}");
    // Every loop's failures are the outage's: what else warns (the lease found expired after
    // it) is a few lines, not 24 a second.
    assert!(
        warns.len() <= 8,
        "{} WARN lines in a 12 s outage:\n{text}",
        warns.len()
    );
}

fn wait(done: impl Fn() -> bool, what: &str, read: &impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "waited too long for {what}:\n{}",
            read()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
