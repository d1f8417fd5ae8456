//! Fair keys across real worker processes on a real Redis: one key's backlog does not hold
//! back another key's first jobs, weights share the starts, and fair keys combine with
//! priority and a concurrency limit; and shares of a limit are work-conserving, idle units lent
//! to the keys that wait. Runs on a cluster too (`GATOR_TEST_REDIS=cluster`), but for the
//! 100,000-job measure.
//!
//! Every job is the test worker binary's `flow_probe`, which appends its id to `{flow}:order`
//! at each start (and counts the units running at that moment in `{flow}:max`).

use gator_core::PendingJob;
use gator_core::flow::FlowSetting;
use gator_tests::{
    RedisServer, WorkerProcess, client, set_flow, spawn_worker_process_with, wait_until,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The test worker binary's `flow_probe`, named here so the test can dispatch it typed.
#[gator_core::job(name = "flow_probe")]
async fn flow_probe(_id: u64, _key: String, _cost: u32, _millis: u64) {}

/// The same job keyed by its `key` argument, as `#[job(fair_key = ..)]` declares it.
#[gator_core::job(name = "flow_probe", fair_key = key)]
async fn keyed_probe(_id: u64, key: String, _cost: u32, _millis: u64) {
    let _ = key;
}

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

/// Probe `id` of fair key `key` on queue `queue`, running `millis`.
fn probe(queue: &str, id: u64, key: &str, millis: u64) -> PendingJob<FlowProbe> {
    FlowProbe::call(id, key.to_owned(), 1, millis)
        .queue(queue)
        .fair_key(key)
}

fn worker(redis: &RedisServer, queue: &str, concurrency: u16) -> WorkerProcess {
    spawn_worker_process_with(WORKER, &redis.url(), queue, concurrency, &["--lease", "4s"])
}

/// The ids in start order, once at least `n` jobs started.
async fn first_starts(redis: &RedisServer, n: usize) -> Vec<u64> {
    let mut conn = redis.client().await;
    wait_until(&format!("{n} starts"), Duration::from_secs(60), || {
        let mut conn = conn.clone();
        async move {
            let len: usize = redis::cmd("LLEN")
                .arg("{flow}:order")
                .query_async(&mut conn)
                .await
                .unwrap();
            len >= n
        }
    })
    .await;
    redis::cmd("LRANGE")
        .arg("{flow}:order")
        .arg(0)
        .arg(n as i64 - 1)
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// The measure: one key holds 100,000 jobs, dispatched first; then 50 keys dispatch
/// 10 each. Each small key's jobs finish within the first ~550 starts, and the big key's run
/// in the order they were dispatched. Without fair keys the small keys' jobs wait behind all
/// 100,000. On one server only: 100,000 dispatches would add a minute to the cluster suite,
/// which runs this file's other tests (the scripts are the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_keys_backlog_does_not_hold_back_fifty_small_keys() {
    const BIG: u64 = 100_000;
    const SMALL: u64 = 1_000_000;
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    for chunk in (0..BIG).collect::<Vec<_>>().chunks(10_000) {
        let jobs: Vec<_> = chunk
            .iter()
            .map(|id| probe("fair", *id, "big", 0))
            .collect();
        client.dispatch_many(jobs).await.unwrap();
    }
    let small: Vec<_> = (0..50u64)
        .flat_map(|key| (0..10u64).map(move |n| (key, n)))
        .map(|(key, n)| probe("fair", SMALL + key * 100 + n, &format!("tenant-{key}"), 0))
        .collect();
    client.dispatch_many(small).await.unwrap();
    let _w = worker(&redis, "fair", 4);
    let starts = first_starts(&redis, 600).await;
    let last_small = starts.iter().rposition(|id| *id >= SMALL);
    let small_started = starts.iter().filter(|id| **id >= SMALL).count();
    assert_eq!(
        small_started, 500,
        "every small key's 10 jobs start within the first 600: {small_started} of 500 did"
    );
    let last_small = last_small.expect("small jobs started") + 1;
    assert!(
        last_small <= 560,
        "the small keys' last job started {last_small}th: ~550 at most (10 rounds of 51 keys)"
    );
    let big: Vec<u64> = starts.iter().copied().filter(|id| *id < SMALL).collect();
    let mut sorted = big.clone();
    sorted.sort_unstable();
    // Four processors start jobs taken in order; their start records may swap neighbours.
    let out_of_place = big
        .iter()
        .zip(&sorted)
        .filter(|(a, b)| a.abs_diff(**b) > 4)
        .count();
    assert_eq!(
        out_of_place, 0,
        "the big key's jobs start in dispatch order: {big:?}"
    );
}

/// `#[job(fair_key = key)]` takes each dispatch's fair key from that argument; a builder's
/// `.fair_key(..)` overrides it; a bad key is refused at dispatch.
#[tokio::test]
async fn the_fair_key_comes_from_the_argument_named() {
    let job = KeyedProbe::call(1, "acme".into(), 1, 0);
    assert_eq!(job.flow_options().fair.as_deref(), Some("acme"));
    let job = KeyedProbe::call(1, "acme".into(), 1, 0).fair_key("globex");
    assert_eq!(job.flow_options().fair.as_deref(), Some("globex"));
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let err = KeyedProbe::call(1, String::new(), 1, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("fair key"), "{err}");
}

/// A key of weight 3 starts three jobs for each job of a key of weight 1 while both wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weights_share_the_starts() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    set_flow(
        &client,
        "weighted",
        &[FlowSetting::FairWeight {
            key: Some("gold".into()),
            weight: Some(3),
        }],
    )
    .await;
    let gold: Vec<_> = (0..400)
        .map(|id| probe("weighted", id, "gold", 0))
        .collect();
    let basic: Vec<_> = (1000..1400)
        .map(|id| probe("weighted", id, "basic", 0))
        .collect();
    client.dispatch_many(basic).await.unwrap();
    client.dispatch_many(gold).await.unwrap();
    let _w = worker(&redis, "weighted", 2);
    let starts = first_starts(&redis, 400).await;
    let gold = starts.iter().filter(|id| **id < 1000).count();
    assert!(
        (290..=310).contains(&gold),
        "weights 3:1 give gold 300 of the first 400 starts, saw {gold}"
    );
}

/// Fair keys combine with a concurrency limit (never exceeded) and with priority: an urgent
/// job of a new key, dispatched behind two keys' backlogs, starts next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_keys_keep_the_limit_and_priority() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    set_flow(&client, "mixed", &[FlowSetting::Limit(Some(2))]).await;
    let mut jobs: Vec<_> = (0..200).map(|id| probe("mixed", id, "a", 30)).collect();
    jobs.extend((1000..1200).map(|id| probe("mixed", id, "b", 30)));
    client.dispatch_many(jobs).await.unwrap();
    let _w = worker(&redis, "mixed", 4);
    first_starts(&redis, 20).await;
    probe("mixed", 5000, "c", 0)
        .priority(5)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let mut conn = redis.client().await;
    let started_then: usize = redis::cmd("LLEN")
        .arg("{flow}:order")
        .query_async(&mut conn)
        .await
        .unwrap();
    let starts = first_starts(&redis, 60).await;
    let urgent = starts.iter().position(|id| *id == 5000);
    // Under a limit of 2, at most the two jobs admitted when it arrived start before it.
    assert!(
        urgent.is_some_and(|at| at <= started_then + 2),
        "the urgent job starts next: at {urgent:?}, {started_then} had started when it came"
    );
    // Between the two backlogs, starts alternate: of the first 40, each key has about half.
    let a = starts[..40].iter().filter(|id| **id < 1000).count();
    assert!(
        (18..=22).contains(&a),
        "a and b alternate: a had {a} of the first 40"
    );
    let max: u64 = redis::cmd("GET")
        .arg("{flow}:max")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        max <= 2,
        "the limit of 2 holds with fair keys: {max} ran at once"
    );
}

/// Probe `id` counted under limit key `key` on queue `lend`, running `millis`.
fn limited(id: u64, key: &str, millis: u64) -> PendingJob<FlowProbe> {
    FlowProbe::call(id, key.to_owned(), 1, millis)
        .queue("lend")
        .limit_key(key)
}

async fn number(conn: &mut gator_core::Connection, args: &[&str]) -> u64 {
    let mut cmd = redis::cmd(args[0]);
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    let value: Option<u64> = cmd.query_async(conn).await.unwrap();
    value.unwrap_or(0)
}

/// The units running now over every process, and the ids started so far, read together.
async fn running_and_starts(conn: &mut gator_core::Connection) -> (u64, Vec<u64>) {
    let (running, order): (Option<u64>, Vec<u64>) = redis::pipe()
        .atomic()
        .get("{flow}:running")
        .lrange("{flow}:order", 0, -1)
        .query_async(conn)
        .await
        .unwrap();
    (running.unwrap_or(0), order)
}

/// Unit-seconds of `limit` left idle while jobs waited (fewer than `dispatched` had started),
/// from the first start until `done`, sampled every 10 ms: what a work-conserving policy keeps
/// near zero.
async fn idle_units_while_jobs_wait(
    mut conn: gator_core::Connection,
    limit: u64,
    dispatched: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
) -> f64 {
    let (mut idle, mut last) = (0.0, Instant::now());
    while !done.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let started = number(&mut conn, &["LLEN", "{flow}:order"]).await;
        let running = number(&mut conn, &["GET", "{flow}:running"]).await;
        let now = Instant::now();
        if started > 0 && started < dispatched.load(Ordering::SeqCst) {
            idle += limit.saturating_sub(running) as f64 * (now - last).as_secs_f64();
        }
        last = now;
    }
    idle
}

/// The case: a limit of 4 with shares east 50 %, west 25 %, every other key 25 %. East
/// has no job; west and north, both waiting, share its 2 idle units: 4 run, not 1 + 1 (before,
/// only a key left waiting alone could borrow). East returns and takes its 2 units back as
/// borrowed jobs end, while west and north still wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_shares_are_lent_to_the_keys_that_wait_and_come_back_to_their_owner() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let share = |key: Option<&str>, percent| FlowSetting::Share {
        key: key.map(str::to_owned),
        percent: Some(percent),
    };
    let settings = [
        FlowSetting::Limit(Some(4)),
        share(Some("east"), 50),
        share(Some("west"), 25),
        share(None, 25),
    ];
    set_flow(&client, "lend", &settings).await;
    let mut jobs: Vec<_> = (0..12).map(|id| limited(id, "west", 600)).collect();
    jobs.extend((100..112).map(|id| limited(id, "north", 600)));
    client.dispatch_many(jobs).await.unwrap();
    let (dispatched, done) = (
        Arc::new(AtomicU64::new(24)),
        Arc::new(AtomicBool::new(false)),
    );
    let sampler = tokio::spawn(idle_units_while_jobs_wait(
        redis.client().await,
        4,
        dispatched.clone(),
        done.clone(),
    ));
    let _w = [worker(&redis, "lend", 3), worker(&redis, "lend", 3)];
    let mut conn = redis.client().await;
    wait_until(
        "4 units running while west and north both wait",
        Duration::from_secs(10),
        || {
            let mut conn = conn.clone();
            async move {
                let (running, order) = running_and_starts(&mut conn).await;
                let west = order.iter().filter(|id| **id < 100).count();
                let north = order.iter().filter(|id| (100..200).contains(*id)).count();
                running >= 4 && west < 12 && north < 12
            }
        },
    )
    .await;

    let east: Vec<_> = (200..206).map(|id| limited(id, "east", 600)).collect();
    dispatched.fetch_add(6, Ordering::SeqCst);
    client.dispatch_many(east).await.unwrap();
    wait_until(
        "east back at its 2 units while the others wait",
        Duration::from_secs(10),
        || {
            let mut conn = conn.clone();
            async move {
                let east = number(&mut conn, &["HGET", "{flow}:running_by", "east"]).await;
                let (_, order) = running_and_starts(&mut conn).await;
                east >= 2 && order.iter().filter(|id| **id < 200).count() < 24
            }
        },
    )
    .await;
    first_starts(&redis, 30).await;
    done.store(true, Ordering::SeqCst);
    let idle = sampler.await.unwrap();
    eprintln!("idle unit-seconds while jobs waited: {idle:.2}");
    assert!(
        number(&mut conn, &["GET", "{flow}:max"]).await <= 4,
        "the limit held"
    );
}
