//! `gator-bench sleepers N`: how late sleeping durable jobs wake, and what a sleeping job costs
//! Redis. N jobs each `ctx.sleep_until` a wake time spread evenly over [`spread`] (5 s by
//! default), starting once all are parked; each reads Redis's `TIME` as it resumes, so its
//! lateness (resume minus wake time) is measured on Redis's clock alone. Reports p50, p99 and
//! max lateness, and Redis's `used_memory` per sleeping job (after all are parked, minus
//! before they were dispatched, over N: the scheduled set's member with its `durable` field
//! and the `suspended` status record).
//!
//! `GATOR_BENCH_SPREAD_MS` sets the spread, `GATOR_BENCH_PARK_MS` (10 s by default) how long
//! from the start the first wake time is: the run fails if parking took longer.

use crate::measure::{percentile_ms, report};
use crate::modes::{BATCH, client, concurrency, job_done, progress, reset_counters};
use crate::modes::{start_worker, wait_for_jobs};
use crate::soak::used_memory;
use anyhow::bail;
use gator_core::{Context, JobError, job};
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

/// How late each job resumed, µs (Redis's clock).
static LATE_US: Mutex<Vec<i64>> = Mutex::new(Vec::new());

/// Sleeps until `wake_ms` (ms since the epoch); once resumed, records how late it is.
#[job(queue = "bench")]
async fn sleeper(ctx: Context, wake_ms: u64) -> Result<(), JobError> {
    ctx.sleep_until(UNIX_EPOCH + Duration::from_millis(wake_ms))
        .await?;
    let now_us = redis_time_us()
        .await
        .map_err(|e| JobError::new(e.to_string()))?;
    let late = now_us - (wake_ms as i64) * 1000;
    LATE_US.lock().unwrap_or_else(|e| e.into_inner()).push(late);
    job_done();
    Ok(())
}

/// Redis's clock, µs since the epoch (`TIME`).
async fn redis_time_us() -> anyhow::Result<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME")
        .query_async(&mut client().await?.connection())
        .await?;
    Ok(secs * 1_000_000 + micros)
}

fn env_ms(name: &str, default: u64) -> anyhow::Result<u64> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| anyhow::anyhow!("{name} must be a number of ms, not {v:?}")),
        Err(_) => Ok(default),
    }
}

/// The window the wake times are spread over.
fn spread() -> anyhow::Result<u64> {
    env_ms("GATOR_BENCH_SPREAD_MS", 5_000)
}

pub async fn sleepers(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    let (spread_ms, park_ms) = (spread()?, env_ms("GATOR_BENCH_PARK_MS", 10_000)?);
    LATE_US.lock().unwrap_or_else(|e| e.into_inner()).clear();
    reset_counters(n);
    let worker = start_worker();
    let before = used_memory(client).await?;
    let first_wake = (redis_time_us().await? / 1000) as u64 + park_ms;
    let wake = |i: usize| first_wake + (i as u64 * spread_ms) / n.max(1) as u64;
    let bar = progress(n, "dispatching sleepers");
    for start in (0..n).step_by(BATCH) {
        let end = (start + BATCH).min(n);
        client
            .dispatch_many((start..end).map(|i| Sleeper::call(wake(i))))
            .await?;
        bar.set_position(end as u64);
    }
    bar.finish_and_clear();
    park(client, n, first_wake).await?;
    let per_job = used_memory(client).await?.saturating_sub(before) / n.max(1) as u64;
    wait_for_jobs(n, "waking").await;
    worker.stop().await?;
    let mut late = LATE_US.lock().unwrap_or_else(|e| e.into_inner()).clone();
    late.sort_unstable();
    let (p50, p99, max) = (
        percentile_ms(&late, 50.0),
        percentile_ms(&late, 99.0),
        percentile_ms(&late, 100.0),
    );
    let conc = concurrency();
    report(
        format!(
            r#"{{"phase":"sleepers","n":{n},"spread_ms":{spread_ms},"late_p50_ms":{p50:.3},"late_p99_ms":{p99:.3},"late_max_ms":{max:.3},"bytes_per_sleeping_job":{per_job},"concurrency":{conc}}}"#
        ),
        format!(
            "sleepers: {n} jobs waking over {spread_ms} ms resumed {p50:.1} ms late (p50), {p99:.1} ms (p99), {max:.1} ms at most (Redis's clock); {per_job} bytes of Redis per sleeping job"
        ),
    );
    Ok(())
}

/// Waits until all `n` jobs sleep in the scheduled set; fails if the first is due by then.
async fn park(client: &gator_core::Client, n: usize, first_wake: u64) -> anyhow::Result<()> {
    let bar = progress(n, "parking");
    let key = client.keys().scheduled(crate::modes::QUEUE);
    loop {
        let parked: usize = redis::cmd("ZCARD")
            .arg(&key)
            .query_async(&mut client.connection())
            .await?;
        bar.set_position(parked as u64);
        if parked >= n {
            break;
        }
        if (redis_time_us().await? / 1000) as u64 >= first_wake {
            bail!(
                "only {parked} of {n} jobs were parked by the first wake time: raise GATOR_BENCH_PARK_MS"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bar.finish_and_clear();
    if (redis_time_us().await? / 1000) as u64 >= first_wake {
        bail!("the jobs were parked after the first wake time: raise GATOR_BENCH_PARK_MS");
    }
    Ok(())
}
