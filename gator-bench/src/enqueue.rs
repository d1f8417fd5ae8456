//! The enqueue modes: `single`, `bulk`, `concurrent`, and `latency-enqueue` (the producer half
//! of the latency run).

use crate::cpu::Sample;
use crate::measure::{now_us, report};
use crate::modes::{BATCH, Noop, client, concurrency, job, progress, queues};
use std::time::{Duration, Instant};

pub(crate) async fn enqueue_rate(
    mode: &str,
    n: usize,
    work: impl Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let client = client().await?;
    let cluster = client.is_cluster();
    let before = Sample::take(&mut client.connection(), cluster).await;
    let t0 = Instant::now();
    work.await?;
    let secs = t0.elapsed().as_secs_f64();
    let cpu = before.per_job(&Sample::take(&mut client.connection(), cluster).await, n);
    let rate = n as f64 / secs;
    let cpu_fields = cpu.json_fields();
    report(
        format!(r#"{{"phase":"{mode}","n":{n},"secs":{secs:.4},"rate":{rate:.1},{cpu_fields}}}"#),
        format!(
            "{mode}: {n} jobs in {secs:.3} s = {rate:.0} jobs/s; {}",
            cpu.summary()
        ),
    );
    Ok(())
}

pub(crate) async fn single(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    let bar = progress(n, "single");
    for i in 0..n {
        job(i, i as i64).through(client).dispatch().await?;
        if i % BATCH == 0 {
            bar.set_position(i as u64);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

pub(crate) async fn bulk(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    let bar = progress(n, "bulk");
    let mut start = 0;
    while start < n {
        let end = (start + BATCH).min(n);
        if queues().len() == 1 {
            client
                .dispatch_many((start..end).map(|i| Noop::call(i as i64)))
                .await?;
        } else {
            // One call per queue: a batch goes to one queue's list.
            for queue in 0..queues().len() {
                let batch: Vec<_> = (start..end)
                    .filter(|i| i % queues().len() == queue)
                    .map(|i| job(i, i as i64))
                    .collect();
                if !batch.is_empty() {
                    client.dispatch_many(batch).await?;
                }
            }
        }
        bar.set_position(end as u64);
        start = end;
    }
    bar.finish_and_clear();
    Ok(())
}

/// N dispatches from `GATOR_BENCH_CONCURRENCY` tasks at once: what pipelining over one multiplexed connection gives.
pub(crate) async fn concurrent(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    let count = concurrency();
    let tasks: Vec<_> = (0..count)
        .map(|t| {
            let client = client.clone();
            let share = n / count + usize::from(t < n % count);
            tokio::spawn(async move {
                for i in 0..share {
                    job(i * count + t, i as i64)
                        .through(&client)
                        .dispatch()
                        .await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

pub(crate) async fn latency_enqueue(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    for i in 0..n {
        job(i, now_us()).through(client).dispatch().await?;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}
