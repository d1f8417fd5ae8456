//! The outbox through crashes and outages (`gator::outbox`), with real processes SIGKILLed: an
//! application killed right after its commit, relays killed at every point of their batches
//! (alone and three at once), Redis down for 10 s, PostgreSQL restarted, and rows Redis
//! refuses. Each test counts the jobs Redis holds by jid: every committed job is there once
//! (0 lost, 0 duplicated), and a job the application did not commit is not.
//!
//! The relays killed here are processes (`gator-test-relay`, built with gator-outbox's
//! `crash-seams`: `GATOR_OUTBOX_ABORT_AFTER=<n>` aborts one after batch n's Redis write and
//! before its rows' delete, the worst moment); the application is `gator-test-outbox-app`.

#[path = "outbox_crashes/harness.rs"]
mod harness;

use gator::outbox::sqlx::{self, PgPool};
use gator::outbox::{EnqueueIn, Relay, RelayConfig, enqueue_many_in};
use gator_core::{Client, job};
use gator_tests::{TestWorker, WorkerProcess, wait_until};
use harness::{kill_relays_until_drained, queued, servers, tally, waiting};
use std::collections::HashMap;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The orders `ship_order` ran for, with how many times.
static SHIPPED: Mutex<Vec<i64>> = Mutex::new(Vec::new());

/// The job `gator-test-outbox-app` enqueues with each order: here it runs, and counts.
#[job(queue = "outbox_app")]
async fn ship_order(order: i64) {
    SHIPPED.lock().unwrap().push(order);
}

// The kill loops' jobs, on two queues so that a batch pushes to both. Never run.
#[job(queue = "outbox_crash_a")]
async fn crash_a(_i: u64) {}

#[job(queue = "outbox_crash_b")]
async fn crash_b(_i: u64) {}

/// A job with a note as large as the caller makes it. Never run.
#[job(queue = "outbox_crash_a")]
async fn crash_note(_note: String) {}

/// The outage test's jobs, one queue: the list's order is the relay's push order. Never run.
#[job(queue = "outbox_order")]
async fn in_order(_i: u64) {}

/// Runs `gator-test-outbox-app` and SIGKILLs it as soon as it has printed `commits` lines;
/// those lines ("<order> <jid>").
async fn run_app_until_killed(
    pg: &gator_tests::PostgresServer,
    redis: &gator_tests::RedisServer,
    commits: usize,
) -> Vec<String> {
    let mut app = WorkerProcess(
        Command::new(env!("CARGO_BIN_EXE_gator-test-outbox-app"))
            .env("DATABASE_URL", pg.url())
            .env("REDIS_URL", redis.url())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    // Each line is printed right after a commit: the kill follows the last one at once, while
    // the app is between that commit and the next (or inside the next transaction).
    let stdout = app.stdout.take().unwrap();
    let printed = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .take(commits)
            .map(|line| line.unwrap())
            .collect::<Vec<String>>()
    })
    .await
    .unwrap();
    app.kill().unwrap(); // SIGKILL
    app.wait().unwrap();
    printed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_killed_right_after_its_commit_still_has_each_committed_job_run_once() {
    let (pg, redis, pool) = servers().await;
    sqlx::query("CREATE TABLE app_orders (id BIGINT PRIMARY KEY)")
        .execute(&pool)
        .await
        .unwrap();
    let printed = run_app_until_killed(&pg, &redis, 20).await;
    assert_eq!(printed.len(), 20, "the app stopped early: {printed:?}");

    let committed: Vec<i64> = sqlx::query_scalar("SELECT id FROM app_orders ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let relay =
        tokio::spawn(Relay::new(pool.clone(), redis_client(&redis).await).run(stop.clone()));
    let worker = TestWorker::start(&redis.url(), Some("outbox_app"), 4);
    wait_until(
        "every committed order's job to run",
        Duration::from_secs(20),
        || async {
            committed
                .iter()
                .all(|o| SHIPPED.lock().unwrap().contains(o))
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await; // room for a second run to show
    worker.stop().await;
    stop.cancel();
    relay.await.unwrap();

    let shipped = SHIPPED.lock().unwrap().clone();
    let mut runs: HashMap<i64, usize> = HashMap::new();
    for order in &shipped {
        *runs.entry(*order).or_default() += 1;
    }
    eprintln!(
        "app killed after {} printed commits; {} orders committed; {} jobs ran",
        printed.len(),
        committed.len(),
        shipped.len()
    );
    for line in &printed {
        let order: i64 = line.split(' ').next().unwrap().parse().unwrap();
        assert!(
            committed.contains(&order),
            "printed order {order} is not committed"
        );
    }
    for order in &committed {
        assert_eq!(runs.get(order), Some(&1), "order {order}: runs {runs:?}");
    }
    assert_eq!(
        shipped.len(),
        committed.len(),
        "a job ran for an order that was never committed: {runs:?}"
    );
    assert_eq!(waiting(&pool).await, 0);
}

/// Commits `n` jobs (half on each of two queues) in transactions of 250; their jids.
async fn commit_crash_jobs(pool: &PgPool, n: u64) -> Vec<String> {
    let mut jids = Vec::new();
    for start in (0..n).step_by(250) {
        let mut tx = pool.begin().await.unwrap();
        let end = (start + 250).min(n);
        let a = enqueue_many_in(&mut tx, (start..end).step_by(2).map(CrashA::call));
        jids.extend(a.await.unwrap());
        let b = enqueue_many_in(&mut tx, (start + 1..end).step_by(2).map(CrashB::call));
        jids.extend(b.await.unwrap());
        tx.commit().await.unwrap();
    }
    jids
}

/// The kill loop's check: every committed job on its queue exactly once.
async fn assert_each_once(redis: &gator_tests::RedisServer, committed: &[String]) {
    let mut found = queued(redis, "outbox_crash_a").await;
    found.extend(queued(redis, "outbox_crash_b").await);
    let (missing, doubled) = tally(committed, &found);
    eprintln!(
        "{} committed, {} in Redis: {} missing, {} duplicated",
        committed.len(),
        found.len(),
        missing.len(),
        doubled.len()
    );
    assert!(
        missing.is_empty(),
        "jobs lost: {:?}",
        &missing[..missing.len().min(5)]
    );
    assert!(
        doubled.is_empty(),
        "jobs duplicated: {:?}",
        &doubled[..doubled.len().min(5)]
    );
    assert_eq!(found.len(), committed.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_killed_at_every_point_of_its_batches_relays_each_committed_job_once() {
    let (pg, redis, pool) = servers().await;
    let committed = commit_crash_jobs(&pool, 5_000).await;
    let started = Instant::now();
    let kills = kill_relays_until_drained(&pg, &redis, &pool, 1, 20).await;
    eprintln!(
        "one relay: drained in {:?} through {kills:?}",
        started.elapsed()
    );
    assert!(
        kills.at_seam >= 20 && kills.sigkilled >= 10,
        "too few kills to mean anything: {kills:?}"
    );
    assert_each_once(&redis, &committed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_relays_killed_over_and_over_share_the_outbox_and_relay_each_job_once() {
    let (pg, redis, pool) = servers().await;
    let committed = commit_crash_jobs(&pool, 5_000).await;
    let started = Instant::now();
    let kills = kill_relays_until_drained(&pg, &redis, &pool, 3, 10).await;
    eprintln!(
        "three relays: drained in {:?} through {kills:?}",
        started.elapsed()
    );
    assert!(
        kills.at_seam >= 20 && kills.sigkilled >= 10,
        "too few kills to mean anything: {kills:?}"
    );
    assert_each_once(&redis, &committed).await;
}

async fn redis_client(redis: &gator_tests::RedisServer) -> Client {
    gator_tests::client(&redis.url()).await
}

/// Commits `count` transactions of 4 `in_order` jobs, `every` apart; their jids in commit order.
async fn commit_in_order(pool: &PgPool, first: u64, count: u64, every: Duration) -> Vec<String> {
    let mut jids = Vec::new();
    for t in 0..count {
        let mut tx = pool.begin().await.unwrap();
        for i in 0..4 {
            let jid = InOrder::call(first + t * 4 + i)
                .enqueue_in(&mut tx)
                .await
                .unwrap();
            jids.push(jid);
        }
        tx.commit().await.unwrap();
        tokio::time::sleep(every).await;
    }
    jids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_wait_out_redis_down_for_10s_in_order_and_the_relay_survives_a_postgres_restart() {
    let (pg, mut redis, pool) = servers().await;
    let config = RelayConfig {
        batch: 50,
        ..RelayConfig::default()
    };
    let relay = Relay::with_config(pool.clone(), redis_client(&redis).await, config);
    let stop = CancellationToken::new();
    let running = tokio::spawn(relay.run(stop.clone()));

    // 1. Redis down for 10 s while the app commits 200 jobs: they wait in PostgreSQL.
    redis.stop();
    let mut committed = commit_in_order(&pool, 0, 50, Duration::from_millis(200)).await;
    assert_eq!(
        waiting(&pool).await,
        200,
        "rows left the outbox while Redis was down"
    );
    redis.restart();
    wait_until(
        "the rows to be relayed after Redis came back",
        Duration::from_secs(30),
        || {
            let pool = pool.clone();
            async move { waiting(&pool).await == 0 }
        },
    )
    .await;
    let found = queued(&redis, "outbox_order").await;
    assert_eq!(found, committed, "the list is not in commit order");

    // 2. PostgreSQL restarted: every connection of the relay is cut, its listener too; rows
    // committed after are relayed without anyone restarting the relay.
    pg.restart();
    committed.extend(commit_in_order(&pool, 1_000, 5, Duration::ZERO).await);
    wait_until(
        "the rows committed after PostgreSQL's restart",
        Duration::from_secs(20),
        || {
            let pool = pool.clone();
            async move { waiting(&pool).await == 0 }
        },
    )
    .await;
    let found = queued(&redis, "outbox_order").await;
    assert_eq!(
        found, committed,
        "lost, doubled or out of order after the restart"
    );
    stop.cancel();
    running.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_redis_refuses_go_dead_with_their_reason_and_the_rows_behind_them_are_relayed() {
    let (_pg, redis, pool) = servers().await;
    // The relay's client takes payloads up to 2 KiB; the app's (none: the default) far more.
    let client = Client::builder(redis.url())
        .max_payload(2048)
        .connect()
        .await
        .unwrap();
    // A queue whose list key holds what Gator did not write (a string would be the marker of
    // a queue under flow control).
    redis.cli(&["HSET", "gator:{outbox_crash_b}:queue", "not", "a list"]);

    let mut tx = pool.begin().await.unwrap();
    let first = CrashA::call(1).enqueue_in(&mut tx).await.unwrap();
    // Sealed under the app's limit (the default), over the relay's.
    let too_big = CrashNote::call("x".repeat(4096))
        .enqueue_in(&mut tx)
        .await
        .unwrap();
    sqlx::query("INSERT INTO gator_outbox (jid, queue, job, payload) VALUES ('garbage', 'outbox_crash_a', 'crash_a', '{not json')")
        .execute(&mut *tx)
        .await
        .unwrap();
    let behind_same = CrashA::call(2).enqueue_in(&mut tx).await.unwrap();
    let wrong_type = CrashB::call(3).enqueue_in(&mut tx).await.unwrap();
    let behind_other = ShipOrder::call(4).enqueue_in(&mut tx).await.unwrap();
    tx.commit().await.unwrap();

    let relay = Relay::new(pool.clone(), client.clone());
    assert_eq!(
        relay.drain().await.unwrap(),
        3,
        "the good rows were not all relayed"
    );
    assert_eq!(queued(&redis, "outbox_crash_a").await, [first, behind_same]);
    assert_eq!(queued(&redis, "outbox_app").await, [behind_other]);
    let dead = gator::outbox::dead(&pool, 10, 0).await.unwrap();
    let reason = |jid: &str| {
        let row = dead.iter().find(|d| d.jid == jid);
        row.map(|d| d.reason.clone())
            .unwrap_or_else(|| panic!("{jid} is not dead: {dead:?}"))
    };
    eprintln!("dead: {:#?}", dead);
    assert_eq!(dead.len(), 3);
    assert!(reason(&too_big).contains("2048"), "{}", reason(&too_big));
    assert!(
        reason("garbage").contains("not a Gator job"),
        "{}",
        reason("garbage")
    );
    assert!(reason(&wrong_type).contains("WRONGTYPE") || reason(&wrong_type).contains("type"));
    let status = gator::outbox::status(&pool).await.unwrap();
    assert_eq!((status.waiting, status.dead), (0, 3));

    // The cause fixed, the dead row is retried and relayed.
    redis.cli(&["DEL", "gator:{outbox_crash_b}:queue"]);
    let id = dead.iter().find(|d| d.jid == wrong_type).unwrap().id;
    assert_eq!(gator::outbox::retry(&pool, &[id]).await.unwrap(), 1);
    assert_eq!(relay.drain().await.unwrap(), 1);
    assert_eq!(queued(&redis, "outbox_crash_b").await, [wrong_type]);
}
