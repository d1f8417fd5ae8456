//! The modes that run a worker: `process`, `limited` and `rated` (`process` under flow
//! control that never binds), `latency-worker`, `backlog`. Each runs the worker at
//! [`concurrency`] and says so in its `RESULT` line.

use crate::cpu::Sample;
use crate::enqueue::bulk;
use crate::measure::{peak_rss_mib, percentile_ms, report};
use crate::modes::{
    BATCH, LATENCIES_US, MEASURE_LATENCY, Noop, QUEUE, clear_queues, client, concurrency, progress,
    queues, reset_counters, start_worker, wait_for_jobs,
};
use anyhow::{Context, bail};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(crate) async fn process(n: usize) -> anyhow::Result<()> {
    bulk(n).await?; // untimed: the backlog the worker starts on
    reset_counters(n);
    let client = client().await?;
    let cluster = client.is_cluster();
    let before = Sample::take(&mut client.connection(), cluster).await;
    let t0 = Instant::now();
    let worker = start_worker();
    let end = wait_for_jobs(n, "process").await;
    let cpu = before.per_job(&Sample::take(&mut client.connection(), cluster).await, n);
    let secs = end.duration_since(t0).as_secs_f64();
    let (rate, rss, conc) = (n as f64 / secs, peak_rss_mib(), concurrency());
    let cpu_fields = cpu.json_fields();
    report(
        format!(
            r#"{{"phase":"process","n":{n},"secs":{secs:.4},"rate":{rate:.1},"rss_mib":{rss:.1},"concurrency":{conc},{cpu_fields}}}"#
        ),
        format!(
            "process: {n} jobs in {secs:.3} s = {rate:.0} jobs/s at concurrency {conc}; peak RSS {rss:.1} MiB; {}",
            cpu.summary()
        ),
    );
    worker.stop().await
}

/// `process` on a queue under flow control, with controls that never bind, so the figure is
/// their bookkeeping alone: `limited`, a concurrency limit of 10,000 units with 3 limit keys
/// (shares of 40 %, 30 % and the default 30 %); `rated`, a rate limit of 10 million jobs a
/// second. Compare with `process` in the same run.
pub(crate) async fn flow_process(mode: &str, n: usize) -> anyhow::Result<()> {
    use gator_core::flow::FlowSetting;
    if queues().len() > 1 {
        bail!("{mode} runs on the one queue `bench`: leave GATOR_BENCH_QUEUES unset");
    }
    let client = client().await?;
    let settings = match mode {
        "limited" => vec![
            FlowSetting::Limit(Some(10_000)),
            FlowSetting::Share {
                key: Some("east".into()),
                percent: Some(40),
            },
            FlowSetting::Share {
                key: Some("north".into()),
                percent: Some(30),
            },
            FlowSetting::Share {
                key: None,
                percent: Some(30),
            },
        ],
        _ => vec![FlowSetting::Rate {
            name: None,
            rate: Some("10000000/1s".parse()?),
        }],
    };
    gator_core::Admin::new(client.clone())
        .set_queue_flow(QUEUE, &settings)
        .await?;
    let bar = progress(n, mode);
    const KEYS: [&str; 3] = ["east", "north", "west"];
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        let batch = (start..end).map(|i| {
            let call = Noop::call(i as i64);
            if mode == "limited" {
                call.limit_key(KEYS[i % 3])
            } else {
                call
            }
        });
        client.dispatch_many(batch).await?;
        bar.set_position(end as u64);
        start = end;
    }
    bar.finish_and_clear();
    reset_counters(n);
    let t0 = Instant::now();
    let worker = start_worker();
    let end = wait_for_jobs(n, mode).await;
    let secs = end.duration_since(t0).as_secs_f64();
    let (rate, rss, conc) = (n as f64 / secs, peak_rss_mib(), concurrency());
    report(
        format!(
            r#"{{"phase":"{mode}","n":{n},"secs":{secs:.4},"rate":{rate:.1},"rss_mib":{rss:.1},"concurrency":{conc}}}"#
        ),
        format!(
            "{mode}: {n} jobs in {secs:.3} s = {rate:.0} jobs/s at concurrency {conc}; peak RSS {rss:.1} MiB"
        ),
    );
    worker.stop().await
}

pub(crate) async fn latency_worker(n: usize) -> anyhow::Result<()> {
    MEASURE_LATENCY.store(true, Ordering::Release);
    reset_counters(n);
    let _worker = start_worker();
    // Ready once this worker has registered and its processors had time to block in a fetch.
    let client = client().await?;
    let started = Instant::now();
    let admin = gator_core::Admin::new(client.clone());
    while admin.processes().await?.is_empty() {
        if started.elapsed() > Duration::from_secs(10) {
            bail!("the worker did not register within 10 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    if let Ok(file) = std::env::var("READY_FILE") {
        std::fs::write(&file, "ready").with_context(|| format!("writing READY_FILE {file}"))?;
    }
    wait_for_jobs(n, "latency").await;
    let mut latencies = LATENCIES_US
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    latencies.sort_unstable();
    let (p50, p99, rss, conc) = (
        percentile_ms(&latencies, 50.0),
        percentile_ms(&latencies, 99.0),
        peak_rss_mib(),
        concurrency(),
    );
    report(
        format!(
            r#"{{"phase":"latency","n":{n},"p50_ms":{p50:.3},"p99_ms":{p99:.3},"rss_mib":{rss:.1},"concurrency":{conc}}}"#
        ),
        format!(
            "latency: {n} jobs at concurrency {conc}, p50 {p50:.3} ms, p99 {p99:.3} ms; peak RSS {rss:.1} MiB"
        ),
    );
    Ok(())
}

/// Process rate with 5k, 50k, 500k and 5M jobs queued (or `GATOR_BACKLOGS`, comma-separated):
/// the worker processes `n` of them (all of a smaller backlog) each time.
pub(crate) async fn backlog(n: usize) -> anyhow::Result<()> {
    let sizes =
        std::env::var("GATOR_BACKLOGS").unwrap_or_else(|_| "5000,50000,500000,5000000".into());
    let client = client().await?;
    for size in sizes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let size: usize = size
            .parse()
            .with_context(|| format!("backlog size {size:?}"))?;
        clear_queues(client).await?;
        bulk(size).await?;
        let count = n.min(size);
        reset_counters(count);
        let t0 = Instant::now();
        let worker = start_worker();
        let end = wait_for_jobs(count, "backlog").await;
        let secs = end.duration_since(t0).as_secs_f64();
        let (rate, conc) = (count as f64 / secs, concurrency());
        report(
            format!(
                r#"{{"phase":"backlog","backlog":{size},"n":{count},"secs":{secs:.4},"rate":{rate:.1},"concurrency":{conc}}}"#
            ),
            format!(
                "backlog {size}: {count} jobs in {secs:.3} s = {rate:.0} jobs/s at concurrency {conc}"
            ),
        );
        // Its in-flight jobs go back to the queue before the next backlog clears it.
        worker.stop().await?;
    }
    clear_queues(client).await
}
