//! `gator-bench scheduled N`: does a large scheduled backlog slow the processing of due jobs?
//! N due jobs are processed twice by a worker at `GATOR_BENCH_CONCURRENCY`: first with nothing
//! scheduled, then with `GATOR_SCHEDULED` jobs (10,000,000 by default) scheduled a year ahead,
//! dispatched by [`TASKS`] tasks through `dispatch_in`, as an application would. Reports both
//! rates, their ratio, and Redis's memory per scheduled job (its status record included).

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
    let plain = process_due(n).await?;
    let before = used_memory(client).await?;
    schedule(backlog).await?;
    let per_job = used_memory(client).await?.saturating_sub(before) / backlog.max(1) as u64;
    let loaded = process_due(n).await?;
    let (ratio, conc) = (loaded / plain, concurrency());
    report(
        format!(
            r#"{{"phase":"scheduled","n":{n},"scheduled":{backlog},"rate_without":{plain:.1},"rate_with":{loaded:.1},"ratio":{ratio:.3},"bytes_per_scheduled_job":{per_job},"concurrency":{conc}}}"#
        ),
        format!(
            "scheduled: {n} due jobs at {plain:.0}/s with nothing scheduled, {loaded:.0}/s beside {backlog} scheduled ({ratio:.2}x); {per_job} bytes of Redis per scheduled job"
        ),
    );
    Ok(())
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
                client.dispatch_in(Noop::call(i as i64), AHEAD).await?;
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
