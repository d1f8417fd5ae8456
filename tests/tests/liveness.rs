//! Liveness is decided by Redis alone: workers whose clocks are minutes off, or that share a
//! host name and a pid in separate PID namespaces (containers with host networking), never
//! recover each other's jobs; a worker paused past its lease loses its jobs to the fleet, and
//! nothing is lost if it then dies; a worker restarted under its `--worker-id` takes over at once.

use gator_core::job;
use gator_tests::{
    RedisServer, WorkerCommand, WorkerProcess, client, pid_namespaces_available, signal, wait_until,
};
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");
/// Jobs for the two-worker runs: 10 processors doing about 33 jobs a second each.
const JOBS: u64 = 6000;

// The worker binary runs these; here they only give typed calls with the same wire names.
#[job(queue = "chaos-default")]
async fn chaos_plain(_id: u64) {}

#[job(queue = "stall")]
async fn sleepy(_id: u64, _millis: u64) {}

/// Dispatches `n` chaos jobs (each naps twice, 0–29 ms, and counts its run in `chaos:runs`).
async fn dispatch_chaos_jobs(redis: &RedisServer, n: u64) {
    let client = client(&redis.url()).await;
    client
        .dispatch_many((0..n).map(ChaosPlain::call))
        .await
        .expect("dispatch the chaos jobs");
}

/// Waits until every one of `n` chaos jobs ran; returns how often each ran.
async fn runs_of_all(
    redis: &RedisServer,
    hash: &str,
    n: u64,
    deadline: Duration,
) -> HashMap<u64, u64> {
    wait_until(&format!("all {n} jobs to run"), deadline, || async {
        redis.cli(&["HLEN", hash]) == n.to_string()
    })
    .await;
    let mut conn = redis.client().await;
    redis::cmd("HGETALL")
        .arg(hash)
        .query_async(&mut conn)
        .await
        .expect("read the runs")
}

fn log_lines(path: &Path, needle: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(needle))
        .map(str::to_owned)
        .collect()
}

/// Every job ran exactly once, and no worker recovered another's jobs.
fn assert_each_ran_once(runs: &HashMap<u64, u64>, logs: &[&Path]) {
    let twice: Vec<(&u64, &u64)> = runs.iter().filter(|(_, n)| **n > 1).collect();
    let recoveries: Vec<String> = logs
        .iter()
        .flat_map(|log| log_lines(log, "recovered the in-flight jobs"))
        .collect();
    assert!(
        twice.is_empty() && recoveries.is_empty(),
        "{} jobs ran more than once (first: {:?}) and live workers were recovered: {recoveries:#?}",
        twice.len(),
        &twice[..twice.len().min(10)]
    );
}

/// With two workers started (logging to `logs`), runs [`JOBS`] chaos jobs: about 20 s of work,
/// long enough for many recovery passes of each; every job runs once and neither worker
/// recovers the other's jobs.
async fn two_workers_run_every_job_once(redis: &RedisServer, logs: [&Path; 2]) {
    wait_until(
        "both workers to register",
        Duration::from_secs(20),
        || async { redis.cli(&["ZCARD", "gator:processes"]) == "2" },
    )
    .await;
    dispatch_chaos_jobs(redis, JOBS).await;
    let runs = runs_of_all(redis, "chaos:runs", JOBS, Duration::from_secs(120)).await;
    assert_each_ran_once(&runs, &logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_whose_clocks_are_five_minutes_apart_never_recover_each_others_jobs() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (ahead, behind) = (dir.path().join("ahead.log"), dir.path().join("behind.log"));
    // A short lease makes a wrong verdict quick to show: each worker checks the other's
    // lease every few hundred ms while jobs are in flight.
    let command = WorkerCommand::new(WORKER, &redis.url(), "chaos-default").args(&[
        "--concurrency",
        "5",
        "--lease",
        "4s",
    ]);
    let _ahead = command.clone().clock_offset("+5m").log_to(&ahead).spawn();
    let _behind = command.clock_offset("-5m").log_to(&behind).spawn();
    two_workers_run_every_job_once(&redis, [&ahead, &behind]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_sharing_a_host_name_in_separate_pid_namespaces_never_recover_each_others_jobs() {
    if let Err(reason) = pid_namespaces_available() {
        eprintln!("SKIPPED: PID namespaces are not available here: {reason}");
        return;
    }
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let command = WorkerCommand::new(WORKER, &redis.url(), "chaos-default")
        .args(&["--concurrency", "5", "--lease", "4s"])
        .own_pid_namespace();
    // The same host name, each its own pid space, and different pids (3 and 5): each sees no
    // process with the other's pid in its /proc, as containers with host networking do.
    let _a = command.clone().log_to(&a).spawn_after(1);
    let _b = command.log_to(&b).spawn_after(3);
    two_workers_run_every_job_once(&redis, [&a, &b]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_restarted_as_pid_1_under_its_worker_id_recovers_its_predecessor_at_once() {
    if let Err(reason) = pid_namespaces_available() {
        eprintln!("SKIPPED: PID namespaces are not available here: {reason}");
        return;
    }
    let redis = RedisServer::start();
    redis.cli(&["SADD", "gator:queues", "stall"]);
    let client = client(&redis.url()).await;
    Sleepy::call(1, 1500)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    // A lease far longer than the test waits: only the takeover can bring the job back.
    let command = WorkerCommand::new(WORKER, &redis.url(), "stall")
        .args(&["--lease", "120s", "--worker-id", "web-0"])
        .own_pid_namespace();
    let mut first = command.spawn(); // pid 1 in its namespace, as in a container
    wait_until("the job to start", Duration::from_secs(20), || async {
        redis.cli(&["HGET", "test:runs", "1"]) == "1"
    })
    .await;
    first.kill().unwrap();
    first.wait().unwrap();
    let _second = command.spawn(); // pid 1 again, in a new namespace
    wait_until(
        "the restarted worker to run its predecessor's job again",
        Duration::from_secs(20),
        || async { redis.cli(&["HGET", "test:runs", "1"]) == "2" },
    )
    .await;
}

/// Starts a worker process on `stall` with a 4 s lease.
fn stall_worker(redis: &RedisServer, concurrency: u16, log: &Path) -> WorkerProcess {
    WorkerCommand::new(WORKER, &redis.url(), "stall")
        .args(&["--lease", "4s", "--concurrency", &concurrency.to_string()])
        .log_to(log)
        .spawn()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_paused_for_less_than_its_lease_keeps_its_jobs() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let dir = tempfile::tempdir().unwrap();
    let (paused_log, other_log) = (dir.path().join("paused.log"), dir.path().join("other.log"));
    redis.cli(&["SADD", "gator:queues", "stall"]);
    client
        .dispatch_many((0..2).map(|id| Sleepy::call(id, 4000)))
        .await
        .unwrap();
    let paused = stall_worker(&redis, 2, &paused_log);
    wait_until("both jobs to start", Duration::from_secs(20), || async {
        redis.cli(&["HLEN", "test:runs"]) == "2"
    })
    .await;
    let _other = stall_worker(&redis, 2, &other_log);
    signal("-STOP", paused.id());
    tokio::time::sleep(Duration::from_secs(2)).await; // half the lease
    signal("-CONT", paused.id());
    wait_until("the jobs to finish", Duration::from_secs(20), || async {
        redis.cli(&["KEYS", "gator:{stall}:inflight:*"]).is_empty()
    })
    .await;
    let runs = runs_of_all(&redis, "test:runs", 2, Duration::from_secs(1)).await;
    assert_each_ran_once(&runs, &[&paused_log, &other_log]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_paused_past_its_lease_loses_its_jobs_and_what_it_takes_after_is_recovered_when_it_dies()
 {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let dir = tempfile::tempdir().unwrap();
    let (paused_log, other_log) = (dir.path().join("paused.log"), dir.path().join("other.log"));
    redis.cli(&["SADD", "gator:queues", "stall"]);
    client
        .dispatch_many((0..2).map(|id| Sleepy::call(id, 6000)))
        .await
        .unwrap();
    let mut paused = stall_worker(&redis, 4, &paused_log);
    wait_until(
        "both long jobs to start",
        Duration::from_secs(20),
        || async { redis.cli(&["HLEN", "test:runs"]) == "2" },
    )
    .await;
    signal("-STOP", paused.id());
    // Another worker, busy with exactly the two jobs once it recovers them.
    let _other = stall_worker(&redis, 2, &other_log);
    wait_until(
        "the other worker to recover and restart the paused worker's jobs",
        Duration::from_secs(30),
        || async {
            redis.cli(&["HGET", "test:runs", "0"]) == "2"
                && redis.cli(&["HGET", "test:runs", "1"]) == "2"
        },
    )
    .await;
    // More work, which only the paused worker has free processors for once it wakes.
    client
        .dispatch_many((10..14).map(|id| Sleepy::call(id, 3000)))
        .await
        .unwrap();
    signal("-CONT", paused.id());
    // It takes new jobs at once, and dies holding them, right after waking, before it beat
    // again: its lease entry, though it was recovered once, still indexes the list they are in.
    tokio::time::sleep(Duration::from_millis(50)).await;
    paused.kill().unwrap();
    paused.wait().unwrap();
    wait_until(
        "every job to run, the dead worker's new ones recovered",
        Duration::from_secs(40),
        || async {
            (10..14).all(|id| redis.cli(&["HEXISTS", "test:runs", &id.to_string()]) == "1")
                && redis.cli(&["LLEN", "gator:{stall}:queue"]) == "0"
                && redis.cli(&["KEYS", "gator:{stall}:inflight:*"]).is_empty()
        },
    )
    .await;
}
