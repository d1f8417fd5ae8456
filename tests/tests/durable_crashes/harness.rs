//! What the durable crash tests share: the worker process, the kill, what the jobs counted,
//! and the wait for a job to reach a point.

use crate::{DurableNap, DurableRows};
use gator_core::{Client, JobStatus};
use gator_tests::{RedisServer, SilentProxy, WorkerCommand, WorkerProcess, wait_until};
use std::collections::HashMap;
use std::time::Duration;

/// A hold the test always ends with a kill.
pub const UNTIL_KILLED: u64 = 600_000;
/// A hold during which the test freezes the connections, so the write after it is sent into
/// the frozen proxy.
pub const HOLD_MS: u64 = 2000;

/// The points a job stops at (the first time it reaches each).
pub fn holds(points: &[&str]) -> Vec<String> {
    points.iter().map(|p| (*p).to_owned()).collect()
}

/// A worker process on `url` serving `durable`, as the worker `id` (its successor takes over),
/// logging at `warn` (`DURABLE_LOG=debug` to see more).
pub fn worker(url: &str, id: &str) -> WorkerProcess {
    worker_with(url, &["--worker-id", id])
}

/// A worker process on `url` serving `durable`, with `args`.
pub fn worker_with(url: &str, args: &[&str]) -> WorkerProcess {
    WorkerCommand::new(env!("CARGO_BIN_EXE_gator-test-worker"), url, "durable")
        .args(&["--concurrency", "2", "--poll-interval", "200ms"])
        .args(args)
        .log_level(&std::env::var("DURABLE_LOG").unwrap_or_else(|_| "warn".into()))
        .spawn()
}

/// SIGKILLs a worker process and waits for it.
pub fn kill(mut worker: WorkerProcess) {
    worker.kill().unwrap(); // SIGKILL: no shutdown code runs
    worker.wait().unwrap();
}

/// How many times job `id` did `what`.
pub fn effects(redis: &RedisServer, id: u64, what: &str) -> u64 {
    let n = redis.cli(&["HGET", "durable:effects", &format!("{id}:{what}")]);
    n.trim().parse().unwrap_or(0)
}

/// Every effect of job `id`, by name.
pub fn all_effects(redis: &RedisServer, id: u64) -> HashMap<String, u64> {
    let all = redis.cli(&["HGETALL", "durable:effects"]);
    let lines: Vec<&str> = all.lines().collect();
    lines
        .chunks(2)
        .filter_map(|pair| {
            let what = pair[0].strip_prefix(&format!("{id}:"))?;
            Some((what.to_owned(), pair.get(1)?.trim().parse().ok()?))
        })
        .collect()
}

/// Waits until job `id` reached `point` (and stopped there, if it holds).
pub async fn reached(redis: &RedisServer, id: u64, point: &str) {
    let field = format!("{id}:{point}");
    wait_until(
        &format!("job {id} to reach {point}"),
        Duration::from_secs(20),
        || async { !redis.cli(&["HGET", "durable:reached", &field]).is_empty() },
    )
    .await;
}

pub async fn done(client: &Client, jid: &str) {
    wait_until("the job to finish", Duration::from_secs(30), || async {
        matches!(client.status(jid).await.unwrap(), JobStatus::Done { .. })
    })
    .await;
}

/// The payloads in the in-flight lists of the `durable` queue.
pub fn in_flight(redis: &RedisServer) -> String {
    let keys = redis.cli(&["KEYS", "gator:{durable}:inflight:*"]);
    keys.lines()
        .map(|key| redis.cli(&["LRANGE", key, "0", "-1"]))
        .collect()
}

/// Waits until job `id` holds at `point`, freezes the proxy during the hold, and waits until
/// the hold is over and the write after it is in the frozen proxy. The freeze waits a little
/// after the point is seen, so that the reply of the write that marked it reaches the job.
pub async fn freeze_during_hold(redis: &RedisServer, proxy: &SilentProxy, id: u64, point: &str) {
    reached(redis, id, point).await;
    tokio::time::sleep(Duration::from_millis(HOLD_MS / 4)).await;
    proxy.cut();
    tokio::time::sleep(Duration::from_millis(HOLD_MS)).await;
}

/// Starts job `id`'s rows on a worker through a proxy, freezes the proxy as the job sends its
/// checkpoint 3 (after row 2), and kills the worker with the write in the proxy.
pub async fn kill_during_checkpoint(
    redis: &RedisServer,
    client: &Client,
    id: u64,
) -> (String, SilentProxy) {
    let jid = DurableRows::call(id, 6, holds(&["save:3"]), HOLD_MS)
        .through(client)
        .dispatch()
        .await
        .unwrap();
    let proxy = SilentProxy::start(redis.port());
    let worker = worker(&proxy.url(), &format!("rows-{id}"));
    freeze_during_hold(redis, &proxy, id, "save:3").await;
    assert_eq!(
        redis.cli(&["HGET", "durable:reached", &format!("{id}:saved:3")]),
        "",
        "the checkpoint must still be in the proxy when the worker dies"
    );
    kill(worker);
    (jid, proxy)
}

/// Runs job `id` (a nap) on a worker through a proxy, freezes the proxy as the run ends in its
/// sleep (the suspension is the next write), and kills the worker with it in the proxy.
pub async fn kill_during_suspend(
    redis: &RedisServer,
    client: &Client,
    id: u64,
) -> (String, SilentProxy) {
    let proxy = SilentProxy::start(redis.port());
    let worker = worker(&proxy.url(), &format!("nap-{id}"));
    // A job parked and woken first, so the server has the suspension's script: a script sent
    // for the first time needs a second round trip (NOSCRIPT, then its text), which a frozen
    // connection never gives, and then no write at all would be in the proxy.
    let warm_up = DurableNap::call(id + 100, 10, holds(&[]), 0)
        .through(client)
        .dispatch()
        .await
        .unwrap();
    done(client, &warm_up).await;
    let jid = DurableNap::call(id, 500, holds(&["pre-sleep"]), HOLD_MS)
        .through(client)
        .dispatch()
        .await
        .unwrap();
    freeze_during_hold(redis, &proxy, id, "pre-sleep").await;
    kill(worker);
    (jid, proxy)
}
