//! `gator-bench soak N`: N jobs through a worker in a steady stream, with Redis's memory
//! sampled every second, to show that the status records of finished jobs (kept for the
//! worker's `--retention`, `GATOR_SOAK_RETENTION`, default 10s here) stay bounded however many
//! jobs pass: at about rate × retention records (or the count, `--finished-max-jobs`), and
//! back to the baseline once they are past the retention.
//!
//! The producer keeps at most `MAX_BACKLOG` jobs queued, so the queue's own size does not
//! stand in for what is measured.

use crate::measure::report;
use crate::modes::{DONE, client, job, reset_counters, start_worker_with, wait_for_jobs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Jobs dispatched per `dispatch_many`.
const CHUNK: usize = 5_000;
/// The most jobs dispatched but not yet run.
const MAX_BACKLOG: usize = 50_000;

pub async fn soak(n: usize) -> anyhow::Result<()> {
    let retention = std::env::var("GATOR_SOAK_RETENTION")
        .ok()
        .map(|text| humantime::parse_duration(&text))
        .transpose()?
        .unwrap_or(Duration::from_secs(10));
    let client = client().await?;
    let baseline = used_memory(client).await?;
    reset_counters(n);
    let worker = start_worker_with(|config| config.retention = retention);

    // Sample used_memory and the number of keys every second while the stream runs.
    let peak_memory = Arc::new(AtomicU64::new(baseline));
    let peak_keys = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (peak_memory, peak_keys) = (peak_memory.clone(), peak_keys.clone());
        tokio::spawn(async move {
            loop {
                if let (Ok(memory), Ok(keys)) = (used_memory(client).await, dbsize(client).await) {
                    peak_memory.fetch_max(memory, Ordering::Relaxed);
                    peak_keys.fetch_max(keys, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };

    let t0 = Instant::now();
    let mut sent = 0;
    while sent < n {
        while sent - DONE.load(Ordering::Acquire).min(sent) > MAX_BACKLOG {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let count = CHUNK.min(n - sent);
        let jobs: Vec<_> = (sent..sent + count).map(|i| job(i, i as i64)).collect();
        client.dispatch_many(jobs).await?;
        sent += count;
    }
    let end = wait_for_jobs(n, "soak").await;
    let secs = end.duration_since(t0).as_secs_f64();
    // Every record left ends within the retention: a key's by its expiry, a `done` record in
    // a bucket by the worker's pruner, so the worker runs on meanwhile.
    tokio::time::sleep(retention + Duration::from_secs(2)).await;
    worker.stop().await?;
    sampler.abort();
    let final_memory = used_memory(client).await?;
    let final_keys = dbsize(client).await?;
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let (peak_memory, peak_keys) = (
        peak_memory.load(Ordering::Relaxed),
        peak_keys.load(Ordering::Relaxed),
    );
    let rate = n as f64 / secs;
    report(
        format!(
            r#"{{"phase":"soak","n":{n},"secs":{secs:.2},"rate":{rate:.1},"retention_s":{},"baseline_mib":{:.1},"peak_mib":{:.1},"final_mib":{:.1},"peak_keys":{peak_keys},"final_keys":{final_keys}}}"#,
            retention.as_secs(),
            mib(baseline),
            mib(peak_memory),
            mib(final_memory),
        ),
        format!(
            "soak: {n} jobs in {secs:.1} s ({rate:.0}/s), retention {retention:?}: Redis used {:.1} MiB before, at most {:.1} MiB ({peak_keys} keys) during, {:.1} MiB ({final_keys} keys) after",
            mib(baseline),
            mib(peak_memory),
            mib(final_memory),
        ),
    );
    Ok(())
}

pub(crate) async fn used_memory(client: &gator_core::Client) -> anyhow::Result<u64> {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut client.connection())
        .await?;
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("INFO memory has no used_memory"))
}

async fn dbsize(client: &gator_core::Client) -> anyhow::Result<u64> {
    Ok(redis::cmd("DBSIZE")
        .query_async(&mut client.connection())
        .await?)
}
