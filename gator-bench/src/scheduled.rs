//! `gator-bench scheduled N`: does a large scheduled backlog slow the processing of due jobs?
//! N due jobs are processed by a worker at `GATOR_BENCH_CONCURRENCY`, [`ROUNDS`] times with
//! nothing scheduled, then [`ROUNDS`] times with `GATOR_SCHEDULED` jobs (10,000,000 by default)
//! scheduled a year ahead, dispatched by [`TASKS`] tasks through `dispatch_in`, as an
//! application would. Reports the median rate of each side, their ratio, every round's rate,
//! and Redis's memory per scheduled job (its status record included).

use crate::enqueue::bulk;
use crate::measure::report;
use crate::modes::{Noop, clear_queues, client, concurrency, progress, reset_counters};
use crate::modes::{start_worker, wait_for_jobs};
use crate::soak::used_memory;
use anyhow::Context;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Tasks scheduling the backlog at once.
const TASKS: usize = 32;
/// How far ahead the backlog is due.
const AHEAD: Duration = Duration::from_secs(365 * 24 * 3600);

pub async fn scheduled(n: usize) -> anyhow::Result<()> {
    let backlog: usize = match std::env::var("GATOR_SCHEDULED") {
        Ok(v) => v
            .parse()
            .with_context(|| format!("GATOR_SCHEDULED {v:?}"))?,
        Err(_) => 10_000_000,
    };
    let client = client().await?;
    clear_queues(client).await?;
    let plain = rounds(n).await?;
    let before = used_memory(client).await?;
    schedule(backlog).await?;
    let per_job = used_memory(client).await?.saturating_sub(before) / backlog.max(1) as u64;
    let loaded = rounds(n).await?;
    let (without, with) = (median(&plain), median(&loaded));
    let (ratio, conc) = (with / without, concurrency());
    report(
        format!(
            r#"{{"phase":"scheduled","n":{n},"scheduled":{backlog},"rate_without":{without:.1},"rate_with":{with:.1},"ratio":{ratio:.3},"rounds_without":{plain:.0?},"rounds_with":{loaded:.0?},"bytes_per_scheduled_job":{per_job},"concurrency":{conc}}}"#
        ),
        format!(
            "scheduled: {n} due jobs at {without:.0}/s with nothing scheduled, {with:.0}/s beside {backlog} scheduled ({ratio:.2}x, medians of {ROUNDS} rounds each); {per_job} bytes of Redis per scheduled job"
        ),
    );
    Ok(())
}

/// Runs of each side: one pair of runs on this (shared, noisy) machine swung from 0.65x to
/// 1.7x, while interleaved runs showed no difference.
const ROUNDS: usize = 3;

/// [`process_due`] [`ROUNDS`] times: each round's rate.
async fn rounds(n: usize) -> anyhow::Result<Vec<f64>> {
    let mut rates = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        rates.push(process_due(n).await?);
    }
    Ok(rates)
}

/// The median of `rates` (not empty).
fn median(rates: &[f64]) -> f64 {
    let mut sorted = rates.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// Processes `n` due jobs queued untimed; returns jobs a second.
async fn process_due(n: usize) -> anyhow::Result<f64> {
    bulk(n).await?;
    reset_counters(n);
    let t0 = Instant::now();
    let worker = start_worker();
    let end = wait_for_jobs(n, "due").await;
    worker.stop().await?;
    Ok(n as f64 / end.duration_since(t0).as_secs_f64())
}

/// Schedules `count` jobs a year ahead from [`TASKS`] tasks.
async fn schedule(count: usize) -> anyhow::Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let bar = progress(count, "scheduling");
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..TASKS {
        let (next, bar) = (next.clone(), bar.clone());
        tasks.spawn(async move {
            let client = client().await?;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return anyhow::Ok(());
                }
                Noop::call(i as i64)
                    .after(AHEAD)
                    .through(client)
                    .dispatch()
                    .await?;
                if i % 10_000 == 0 {
                    bar.set_position(i as u64);
                }
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    bar.finish_and_clear();
    Ok(())
}
