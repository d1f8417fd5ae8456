//! `gator-bench outbox N`: the transactional outbox (`gator::outbox`) between a PostgreSQL and
//! the Redis at `REDIS_URL`. The PostgreSQL is `GATOR_BENCH_PG_URL`, else a private cluster this
//! mode makes and drops ([`postgres`], fsync on). Two measures, a `RESULT` line each:
//!
//! 1. Relay throughput: N rows committed with `enqueue_many_in` (transactions of 5,000), then
//!    drained into Redis by one relay, and again by two at once (each with its own PostgreSQL
//!    pool and Redis client, as two worker processes would have), `GATOR_OUTBOX_BATCH` rows a
//!    batch (the relay's default otherwise); jobs a second from the first take to the last row.
//! 2. Commit-to-queued latency: one relay running as `gator-worker --outbox` runs it (woken by
//!    `LISTEN/NOTIFY`), a producer committing one job per transaction at `GATOR_OUTBOX_RATE`
//!    a second (500 by default: what one connection commits steadily here with fsync on) for
//!    min(N, 10,000) jobs, and a consumer blocked in `BLPOP` on the queue's list: from the
//!    commit's return to the `BLPOP`'s, p50, p99 and max (one process, one clock).

mod postgres;

use crate::measure::{percentile_ms, report};
use crate::modes::{client, redis_url};
use anyhow::Context;
use gator_core::{Client, job};
use gator_outbox::sqlx::{self, PgPool};
use gator_outbox::{EnqueueIn, Relay, RelayConfig, enqueue_many_in};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The queue the outbox's jobs go to.
const QUEUE: &str = "bench_outbox";
/// Rows committed per transaction when filling the outbox.
const FILL: usize = 5_000;
/// The most jobs the latency measure commits.
const LATENCY_JOBS: usize = 10_000;

/// The job every row holds; it never runs (nothing serves its queue).
#[job(queue = "bench_outbox")]
async fn outbox_noop(_i: i64) {}

pub async fn outbox(n: usize) -> anyhow::Result<()> {
    let private = match std::env::var("GATOR_BENCH_PG_URL") {
        Ok(_) => None,
        Err(_) => Some(postgres::PrivatePostgres::start()?),
    };
    let url = match &private {
        Some(pg) => pg.url(),
        None => std::env::var("GATOR_BENCH_PG_URL")?,
    };
    let pool = PgPool::connect(&url)
        .await
        .context("connecting to PostgreSQL")?;
    gator_outbox::migrate(&pool).await?;
    let batch = std::env::var("GATOR_OUTBOX_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(RelayConfig::default().batch);
    let one = throughput(&pool, &url, n, 1, batch).await?;
    let two = throughput(&pool, &url, n, 2, batch).await?;
    report(
        format!(
            r#"{{"phase":"outbox-relay","n":{n},"batch":{batch},"relay_1":{one:.1},"relay_2":{two:.1}}}"#
        ),
        format!(
            "outbox relay: {n} committed rows into Redis at {one:.0} jobs/s with one relay, {two:.0} jobs/s with two ({batch} a batch)"
        ),
    );
    let rate: f64 = std::env::var("GATOR_OUTBOX_RATE")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(500.0);
    let count = n.min(LATENCY_JOBS);
    let (achieved, mut latencies) = latency(&pool, count, rate).await?;
    latencies.sort_unstable();
    let (p50, p99) = (
        percentile_ms(&latencies, 50.0),
        percentile_ms(&latencies, 99.0),
    );
    let max = percentile_ms(&latencies, 100.0);
    report(
        format!(
            r#"{{"phase":"outbox-latency","n":{count},"rate":{rate},"achieved":{achieved:.1},"p50_ms":{p50:.3},"p99_ms":{p99:.3},"max_ms":{max:.3}}}"#
        ),
        format!(
            "outbox commit-to-queued: {count} jobs committed one per transaction at {rate}/s ({achieved:.0}/s achieved): p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms"
        ),
    );
    Ok(())
}

/// Empties the outbox and the queue.
async fn clear(pool: &PgPool, client: &Client) -> anyhow::Result<()> {
    sqlx::query("TRUNCATE gator_outbox").execute(pool).await?;
    redis::cmd("DEL")
        .arg(client.keys().queue(QUEUE))
        .query_async::<()>(&mut client.connection())
        .await?;
    Ok(())
}

async fn waiting(pool: &PgPool) -> anyhow::Result<i64> {
    let sql = "SELECT count(*) FROM gator_outbox WHERE dead_at IS NULL";
    Ok(sqlx::query_scalar(sql).fetch_one(pool).await?)
}

async fn queued(client: &Client) -> anyhow::Result<usize> {
    Ok(redis::cmd("LLEN")
        .arg(client.keys().queue(QUEUE))
        .query_async(&mut client.connection())
        .await?)
}

/// Commits `n` rows, then drains them with `relays` relays at once; jobs a second.
async fn throughput(
    pool: &PgPool,
    url: &str,
    n: usize,
    relays: usize,
    batch: usize,
) -> anyhow::Result<f64> {
    let client = client().await?;
    clear(pool, client).await?;
    for start in (0..n).step_by(FILL) {
        let mut tx = pool.begin().await?;
        let jobs = (start..(start + FILL).min(n)).map(|i| OutboxNoop::call(i as i64));
        enqueue_many_in(&mut tx, jobs).await?;
        tx.commit().await?;
    }
    let mut relaying = tokio::task::JoinSet::new();
    let t0 = Instant::now();
    for r in 0..relays {
        let pool = PgPool::connect(url).await?;
        let client = Client::connect(&redis_url()).await?;
        let config = RelayConfig {
            batch,
            id: format!("bench-relay-{r}"),
            ..RelayConfig::default()
        };
        let relay = Relay::with_config(pool.clone(), client, config);
        relaying.spawn(async move {
            // `drain` stops at a short batch, which another relay's locks can cause.
            while waiting(&pool).await? > 0 {
                relay.drain().await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = relaying.join_next().await {
        done??;
    }
    let rate = n as f64 / t0.elapsed().as_secs_f64();
    let found = queued(client).await?;
    anyhow::ensure!(found == n, "{n} rows committed, {found} jobs queued");
    Ok(rate)
}

/// Commits `count` jobs one per transaction at `rate` a second while a relay runs; each one's
/// µs from its commit's return to its arrival on the list; and the rate the commits achieved.
async fn latency(pool: &PgPool, count: usize, rate: f64) -> anyhow::Result<(f64, Vec<i64>)> {
    let client = client().await?;
    clear(pool, client).await?;
    let stop = CancellationToken::new();
    let relay = Relay::new(pool.clone(), Client::connect(&redis_url()).await?);
    let relaying = tokio::spawn(relay.run(stop.clone()));
    let consumer = tokio::spawn(consume(client.keys().queue(QUEUE), count));
    // Room for the relay to LISTEN: a row committed before it would wait for the poll.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut committed = HashMap::with_capacity(count);
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate.max(1.0)));
    for i in 0..count {
        tick.tick().await;
        let mut tx = pool.begin().await?;
        let jid = OutboxNoop::call(i as i64).enqueue_in(&mut tx).await?;
        tx.commit().await?;
        committed.insert(jid, Instant::now());
    }
    let achieved = count as f64 / started.elapsed().as_secs_f64();
    let arrived = tokio::time::timeout(Duration::from_secs(60), consumer)
        .await
        .context("the relay did not queue every job within 60 s")???;
    stop.cancel();
    relaying.await?;
    Ok((
        achieved,
        committed
            .iter()
            .map(|(jid, at)| {
                let arrival = arrived.get(jid).copied().unwrap_or_else(Instant::now);
                arrival.saturating_duration_since(*at).as_micros() as i64
            })
            .collect(),
    ))
}

/// Pops `count` jobs off `key` as they arrive, on a connection of its own (`BLPOP` blocks it);
/// when each arrived, by jid.
async fn consume(key: String, count: usize) -> anyhow::Result<HashMap<String, Instant>> {
    let mut conn = redis::Client::open(redis_url())?
        .get_multiplexed_async_connection()
        .await?;
    let mut arrived = HashMap::with_capacity(count);
    while arrived.len() < count {
        let popped: Option<(String, String)> = redis::cmd("BLPOP")
            .arg(&key)
            // Within the connection's response timeout: an idle queue is no error.
            .arg(0.1)
            .query_async(&mut conn)
            .await?;
        let Some((_, payload)) = popped else { continue };
        let at = Instant::now();
        let value: serde_json::Value = serde_json::from_str(&payload)?;
        let jid = value["jid"].as_str().context("a payload without a jid")?;
        arrived.insert(jid.to_owned(), at);
    }
    Ok(arrived)
}
