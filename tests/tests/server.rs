//! Gator tells which server it talks to: Valkey reports `redis_version:7.2.4` whatever its own
//! version, so the worker's start line and the dashboard's overview read `server_name` and
//! `valkey_version`. Run against Redis by `scripts/test` and against Valkey 9 by
//! `scripts/test-valkey`; each run checks the server it was given.

use gator_core::Admin;
use gator_tests::{RedisServer, WorkerCommand, client, server_is_valkey, terminate, wait_until};
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_and_the_overview_name_the_server_and_its_own_version() {
    let redis = RedisServer::start_single();
    let (name, major) = if server_is_valkey() {
        ("valkey", "9.")
    } else {
        ("redis", "7.")
    };
    let overview = Admin::new(client(&redis.url()).await)
        .overview()
        .await
        .unwrap();
    assert_eq!(overview.redis.server, name);
    assert!(
        overview.redis.version.starts_with(major),
        "{name} reports version {}",
        overview.redis.version
    );

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let mut worker = WorkerCommand::new(WORKER, &redis.url(), "server")
        .log_level("info")
        .log_to(&log)
        .spawn();
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("the worker to start", Duration::from_secs(20), || async {
        read().contains("worker started")
    })
    .await;
    let line = read()
        .lines()
        .find(|l| l.contains("worker started"))
        .map(str::to_owned)
        .unwrap();
    let said = format!("{name} {}", overview.redis.version);
    assert!(line.contains(&said), "the start line names {said}: {line}");
    assert!(terminate(&mut worker.0).success());
}
