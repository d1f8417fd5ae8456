//! `gator-bench retry N`: how late a short retry starts. N jobs, dispatched 5 ms apart to an
//! idle worker (`GATOR_BENCH_CONCURRENCY`, the default poll interval of 1 s), each failing its
//! first attempt with a backoff of 500 ms; the figure is the second attempt's start minus the
//! first attempt's failure plus 500 ms, as p50, p99 and max.

use crate::measure::{percentile_ms, report};
use crate::modes::{client, concurrency, job_done, reset_counters, start_worker, wait_for_jobs};
use gator_core::job;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The backoff of the one retry.
const BACKOFF: Duration = Duration::from_millis(500);

/// When each job's first attempt failed, by its argument.
static FAILED_AT: Mutex<Option<HashMap<i64, Instant>>> = Mutex::new(None);
/// How late each retry started, µs.
static LATE_US: Mutex<Vec<i64>> = Mutex::new(Vec::new());

/// Fails its first attempt, succeeds its retry.
#[job(queue = "bench", retries = 1, backoff = ["500ms"])]
async fn retried(i: i64) -> Result<(), String> {
    let now = Instant::now();
    let mut failed = FAILED_AT.lock().unwrap_or_else(|e| e.into_inner());
    let failed = failed.get_or_insert_with(HashMap::new);
    let Some(first) = failed.get(&i) else {
        failed.insert(i, now);
        return Err("the first attempt fails on purpose".into());
    };
    let late = now.saturating_duration_since(*first + BACKOFF);
    let mut late_us = LATE_US.lock().unwrap_or_else(|e| e.into_inner());
    late_us.push(late.as_micros() as i64);
    job_done();
    Ok(())
}

pub async fn retry(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    reset_counters(n);
    let worker = start_worker();
    for i in 0..n {
        Retried::call(i as i64).through(client).dispatch().await?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    wait_for_jobs(n, "retry").await;
    worker.stop().await?;
    let mut late = LATE_US.lock().unwrap_or_else(|e| e.into_inner()).clone();
    late.sort_unstable();
    let (p50, p99, max) = (
        percentile_ms(&late, 50.0),
        percentile_ms(&late, 99.0),
        percentile_ms(&late, 100.0),
    );
    let (backoff, conc) = (BACKOFF.as_millis(), concurrency());
    report(
        format!(
            r#"{{"phase":"retry","n":{n},"backoff_ms":{backoff},"late_p50_ms":{p50:.3},"late_p99_ms":{p99:.3},"late_max_ms":{max:.3},"concurrency":{conc}}}"#
        ),
        format!(
            "retry: {n} retries due {backoff} ms after their failure started {p50:.1} ms late (p50), {p99:.1} ms (p99), {max:.1} ms at most"
        ),
    );
    Ok(())
}
