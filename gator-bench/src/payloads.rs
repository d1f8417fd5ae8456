//! `payloads N`: what large payloads cost (issue 35). For 1 KiB, 64 KiB and 1 MiB of
//! arguments (N, N/4 and N/40 jobs), each twice: `plain` (compression off, the old behaviour)
//! and `packed` (the default 16 KiB threshold), and for 1 MiB a third time, `aside` (packed,
//! then stored in the job's side key over 16 KiB: `payload::aside`; the other two forms keep
//! aside off): Redis's `used_memory` per queued job, and the rate a worker runs them at. The
//! arguments are text that compresses as JSON records do.

use crate::measure::report;
use crate::modes::{QUEUE, job_done, redis_url, reset_counters, start_worker_with, wait_for_jobs};
use crate::soak::used_memory;
use gator_core::{Client, job};
use std::time::Instant;

/// The payload job: one string argument, dropped.
#[job(queue = "bench")]
pub(crate) async fn blob(_text: String) {
    job_done();
}

/// The largest payload the run dispatches, and so the limit of its client and worker.
const LIMIT: usize = 4 << 20;

pub(crate) async fn payloads(n: usize) -> anyhow::Result<()> {
    const OFF: usize = usize::MAX;
    for (bytes, jobs) in [(1 << 10, n), (64 << 10, n / 4), (1 << 20, n / 40)] {
        let aside = (bytes == 1 << 20).then_some(("aside", 16 << 10, 16 << 10));
        let forms = [("plain", OFF, OFF), ("packed", 16 << 10, OFF)];
        for (form, compress_over, aside_over) in forms.into_iter().chain(aside) {
            one(bytes, jobs.max(1), form, (compress_over, aside_over)).await?;
        }
    }
    Ok(())
}

/// Text of `bytes` bytes that compresses as JSON records do (numbers and repeated words).
fn text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 64);
    let mut n = 0u64;
    while text.len() < bytes {
        text.push_str(&format!(
            r#"{{"line":{n},"sku":"A-{}","qty":{}}},"#,
            n * 7919 % 10007,
            n % 13
        ));
        n += 1;
    }
    text.truncate(bytes);
    text
}

/// One size in one form: memory per queued job, then the rate they run at.
/// `over`: the compression and aside thresholds.
async fn one(bytes: usize, n: usize, form: &str, over: (usize, usize)) -> anyhow::Result<()> {
    let client = Client::builder(redis_url())
        .max_payload(LIMIT)
        .compress_over(over.0)
        .aside_over(over.1)
        .connect()
        .await?;
    redis::cmd("DEL")
        .arg(client.keys().queue(QUEUE))
        .query_async::<()>(&mut client.connection())
        .await?;
    let arg = text(bytes);
    let before = used_memory(&client).await?;
    for start in (0..n).step_by(100) {
        let calls = (start..(start + 100).min(n)).map(|_| Blob::call(arg.clone()));
        client.dispatch_many(calls).await?;
    }
    let per_job = used_memory(&client).await?.saturating_sub(before) / n as u64;
    reset_counters(n);
    let t0 = Instant::now();
    let worker = start_worker_with(|config| config.max_payload = Some(LIMIT));
    let secs = wait_for_jobs(n, "payloads")
        .await
        .duration_since(t0)
        .as_secs_f64();
    worker.stop().await?;
    let rate = n as f64 / secs;
    report(
        format!(
            r#"{{"phase":"payloads","form":"{form}","bytes":{bytes},"n":{n},"memory_per_job":{per_job},"secs":{secs:.4},"rate":{rate:.1}}}"#
        ),
        format!(
            "payloads: {bytes} B {form}: {per_job} B of Redis memory per job; {n} jobs in {secs:.3} s = {rate:.0} jobs/s"
        ),
    );
    Ok(())
}
