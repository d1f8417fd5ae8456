//! No-overlap locks across real worker processes on a real Redis (a cluster too): jobs of one
//! overlap key never run at once while other keys run beside them, the ones that wait are
//! parked (not retried), and the lock comes back when its holder fails or its process is
//! SIGKILLed.
//!
//! Every job here is the test worker binary's `overlap_probe`, which records, atomically at
//! each start, how many probes of its key and in all run at that moment (`{ovl}:max`,
//! `{ovl}:max_all`), the order of starts (`{ovl}:order`) and each id's runs (`{ovl}:runs`).

use gator_core::{Cancellation, PendingJob};
use gator_tests::{RedisServer, WorkerProcess, client, spawn_worker_process_with, wait_until};
use std::collections::HashMap;
use std::time::Duration;

/// The test worker binary's `overlap_probe`, keyed by its `key` argument.
#[gator_core::job(name = "overlap_probe", queue = "ovl", overlap_key = key)]
async fn overlap_probe(_id: u64, key: String, _millis: u64, _fail: bool) {
    let _ = key;
}

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");
const QUEUE: &str = "ovl";

fn probe(id: u64, key: &str, millis: u64) -> PendingJob<OverlapProbe> {
    OverlapProbe::call(id, key.to_owned(), millis, false)
}

fn workers(redis: &RedisServer, processes: usize, concurrency: u16) -> Vec<WorkerProcess> {
    (0..processes)
        .map(|_| {
            spawn_worker_process_with(WORKER, &redis.url(), QUEUE, concurrency, &["--lease", "4s"])
        })
        .collect()
}

async fn query<T: redis::FromRedisValue>(redis: &RedisServer, args: &[&str]) -> T {
    let mut conn = redis.client().await;
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut conn).await.unwrap()
}

async fn runs(redis: &RedisServer) -> HashMap<u64, u64> {
    query(redis, &["HGETALL", "{ovl}:runs"]).await
}

async fn max_by_key(redis: &RedisServer) -> HashMap<String, u64> {
    query(redis, &["HGETALL", "{ovl}:max"]).await
}

async fn count(redis: &RedisServer, args: &[&str]) -> u64 {
    query(redis, args).await
}

/// Waits until every id of `ids` has run at least once.
async fn wait_for_runs(redis: &RedisServer, ids: &[u64], deadline: Duration) {
    wait_until(&format!("probes {ids:?} ran"), deadline, || async {
        let runs = runs(redis).await;
        ids.iter().all(|id| runs.contains_key(id))
    })
    .await;
}

const RETRY: &str = "gator:{ovl}:retry";
const DEAD: &str = "gator:{ovl}:dead";
const LOCKS: &str = "gator:{ovl}:overlap";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_of_one_key_never_overlap_across_processes_while_other_keys_run_beside_them() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // 3 keys of 6 jobs each, and 4 jobs with one set of arguments keyed by default (the wire
    // name and the arguments): each group runs one job at a time.
    let mut ids = Vec::new();
    for n in 0..6 {
        for (k, key) in ["a", "b", "c"].iter().enumerate() {
            let id = n * 3 + k as u64;
            probe(id, key, 150)
                .through(&client)
                .dispatch()
                .await
                .unwrap();
            ids.push(id);
        }
    }
    for _ in 0..4 {
        probe(100, "same-args", 150)
            .no_overlap()
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let _fleet = workers(&redis, 3, 4);
    // The jobs that wait are parked in the set of their overlap key's waiters.
    wait_until(
        "jobs of key a wait for the lock",
        Duration::from_secs(20),
        || async { count(&redis, &["EXISTS", "gator:{ovl}:overlap_wait:a"]).await == 1 },
    )
    .await;
    wait_for_runs(&redis, &ids, Duration::from_secs(60)).await;
    wait_until(
        "the probe with the same arguments ran 4 times",
        Duration::from_secs(20),
        || async { runs(&redis).await.get(&100) == Some(&4) },
    )
    .await;

    let max = max_by_key(&redis).await;
    for key in ["a", "b", "c", "same-args"] {
        assert_eq!(
            max.get(key),
            Some(&1),
            "key {key} ran twice at once: {max:?}"
        );
    }
    let all = count(&redis, &["GET", "{ovl}:max_all"]).await;
    assert!(all > 1, "other keys never ran beside each other");
    // Waiting was parking: no job was retried, none failed, each ran once.
    let runs = runs(&redis).await;
    assert!(ids.iter().all(|id| runs[id] == 1), "{runs:?}");
    assert_eq!(count(&redis, &["ZCARD", RETRY]).await, 0);
    assert_eq!(count(&redis, &["ZCARD", DEAD]).await, 0);
    wait_until(
        "every lock is released",
        Duration::from_secs(10),
        || async { count(&redis, &["HLEN", LOCKS]).await == 0 },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_holders_lock_is_released_by_recovery_and_the_others_go_on() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // Probe 1's first run hangs, to be killed mid-run.
    let _: () = query(&redis, &["SADD", "{ovl}:hang", "1"]).await;
    let holder = probe(1, "k", 100)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let mut doomed = workers(&redis, 1, 4);
    wait_for_runs(&redis, &[1], Duration::from_secs(20)).await;
    for id in [2, 3] {
        probe(id, "k", 100)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    probe(9, "other", 100)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    // Another key runs; the holder's key waits, parked.
    wait_for_runs(&redis, &[9], Duration::from_secs(20)).await;
    wait_until("probes 2 and 3 wait", Duration::from_secs(10), || async {
        count(&redis, &["EXISTS", "gator:{ovl}:overlap_wait:k"]).await == 1
    })
    .await;
    let locked: Option<String> = query(&redis, &["HGET", LOCKS, "k"]).await;
    assert_eq!(locked.as_deref(), Some(holder.as_str()));
    // The queue's status shows them waiting for the lock.
    let status = gator_core::Admin::new(client.clone())
        .flow_status(QUEUE)
        .await
        .unwrap();
    let waiting: Vec<_> = status
        .parked
        .iter()
        .filter(|p| p.state == "overlap")
        .collect();
    assert_eq!(waiting.len(), 1, "{:?}", status.parked);
    assert_eq!(
        (waiting[0].overlap.as_deref(), waiting[0].jobs),
        (Some("k"), 2)
    );

    doomed[0].kill().unwrap(); // SIGKILL: the holder never settles
    doomed[0].wait().unwrap();
    // Its run is over: count it off as the probe itself would have.
    let _: () = query(&redis, &["HINCRBY", "{ovl}:running", "k", "-1"]).await;
    let _: () = query(&redis, &["DECR", "{ovl}:running_all"]).await;
    let _survivors = workers(&redis, 2, 4);
    // Once the 4 s lease runs out, recovery puts probe 1 back first in line and frees its lock.
    wait_for_runs(&redis, &[2, 3], Duration::from_secs(30)).await;
    let runs = runs(&redis).await;
    assert_eq!(runs[&1], 2, "the killed holder ran again: {runs:?}");
    assert_eq!(max_by_key(&redis).await.get("k"), Some(&1));
    let order: Vec<u64> = query(&redis, &["LRANGE", "{ovl}:order", "0", "-1"]).await;
    let after_kill: Vec<u64> = order.into_iter().filter(|id| *id != 9).skip(1).collect();
    assert_eq!(after_kill, [1, 2, 3], "the recovered holder went first");
    assert_eq!(count(&redis, &["ZCARD", RETRY]).await, 0);
    wait_until(
        "every lock is released",
        Duration::from_secs(10),
        || async { count(&redis, &["HLEN", LOCKS]).await == 0 },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_holder_releases_the_lock_when_it_goes_to_the_retry_set() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // Probe 1 fails; the worker's default backoff keeps it in the retry set for 15 s or more.
    OverlapProbe::call(1, "k".into(), 300, true)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    probe(2, "k", 100)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let _fleet = workers(&redis, 2, 2);
    wait_for_runs(&redis, &[1, 2], Duration::from_secs(20)).await;
    assert_eq!(
        count(&redis, &["ZCARD", RETRY]).await,
        1,
        "probe 2 ran while the failed holder waits for its retry"
    );
    let order: Vec<u64> = query(&redis, &["LRANGE", "{ovl}:order", "0", "-1"]).await;
    assert_eq!(order, [1, 2]);
    assert_eq!(max_by_key(&redis).await.get("k"), Some(&1));
    wait_until("the lock is released", Duration::from_secs(10), || async {
        count(&redis, &["HLEN", LOCKS]).await == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_overlap_key_is_refused_at_dispatch_and_nothing_is_queued() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let err = probe(1, "", 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("overlap key"), "{err}");
    let err = probe(1, "k", 0)
        .overlap_key("a\u{7}b")
        .through(&client)
        .dispatch()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("invisible character U+0007"),
        "{err}"
    );
    // A long key is stored as its digest, and works.
    let long = "x".repeat(300);
    probe(1, &long, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let _fleet = workers(&redis, 1, 2);
    wait_for_runs(&redis, &[1], Duration::from_secs(20)).await;
    assert_eq!(count(&redis, &["ZCARD", DEAD]).await, 0);
}

/// Starts probe 1 of key `k` hanging (`hang`: `{ovl}:hang`, or `{ovl}:deaf` to cancels and
/// shutdown) on one worker process, queues probes 2 and 3 of `k`
/// behind it, and waits until they wait for its lock. Returns the holder's jid and the worker.
async fn a_hanging_holder_with_two_waiting(
    redis: &RedisServer,
    client: &gator_core::Client,
    hang: &str,
    extra: &[&str],
) -> (String, WorkerProcess) {
    let _: () = query(redis, &["SADD", hang, "1"]).await;
    let holder = probe(1, "k", 100).through(client).dispatch().await.unwrap();
    let mut args = vec!["--lease", "4s"];
    args.extend_from_slice(extra);
    let worker = spawn_worker_process_with(WORKER, &redis.url(), QUEUE, 4, &args);
    wait_for_runs(redis, &[1], Duration::from_secs(20)).await;
    for id in [2, 3] {
        probe(id, "k", 100)
            .through(client)
            .dispatch()
            .await
            .unwrap();
    }
    wait_until("probes 2 and 3 wait", Duration::from_secs(10), || async {
        count(redis, &["EXISTS", "gator:{ovl}:overlap_wait:k"]).await == 1
    })
    .await;
    (holder, worker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_holder_releases_the_lock() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let (holder, _worker) =
        a_hanging_holder_with_two_waiting(&redis, &client, "{ovl}:hang", &[]).await;
    // (Removed if its record does not say running yet, 100 ms into its run: it is marked all
    // the same, and its worker stops it.)
    let cancelled = client.cancel(&holder).await.unwrap();
    assert!(
        matches!(cancelled, Cancellation::Stopping | Cancellation::Removed),
        "{cancelled:?}"
    );
    // The probe sees the cancel (`ctx.cancelled()`), counts itself off and ends.
    wait_for_runs(&redis, &[2, 3], Duration::from_secs(20)).await;
    assert_eq!(
        runs(&redis).await[&1],
        1,
        "a cancelled job does not run again"
    );
    assert_eq!(max_by_key(&redis).await.get("k"), Some(&1));
    wait_until("the lock is released", Duration::from_secs(10), || async {
        count(&redis, &["HLEN", LOCKS]).await == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_put_back_at_shutdown_releases_the_lock_and_runs_first() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let (_, mut stopping) = a_hanging_holder_with_two_waiting(
        &redis,
        &client,
        "{ovl}:deaf",
        &["--shutdown-timeout", "1s"],
    )
    .await;
    // SIGTERM: the holder outlives the shutdown timeout and is put back (put_back.lua).
    assert!(gator_tests::terminate(&mut stopping).success());
    let _: () = query(&redis, &["HINCRBY", "{ovl}:running", "k", "-1"]).await;
    let _: () = query(&redis, &["DECR", "{ovl}:running_all"]).await;
    assert_eq!(
        count(&redis, &["HLEN", LOCKS]).await,
        0,
        "the put-back freed the lock"
    );
    let _next = workers(&redis, 1, 4);
    wait_for_runs(&redis, &[2, 3], Duration::from_secs(20)).await;
    let order: Vec<u64> = query(&redis, &["LRANGE", "{ovl}:order", "0", "-1"]).await;
    assert_eq!(order, [1, 1, 2, 3], "the put-back holder went first");
    assert_eq!(max_by_key(&redis).await.get("k"), Some(&1));
}
