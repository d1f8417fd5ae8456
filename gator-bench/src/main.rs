//! `gator-bench MODE N`: Gator's figures against the Redis at `REDIS_URL`, one `RESULT {json}`
//! line per measurement in the shape `bench/peers/run-all` reads (`scripts/peers-bench`), so Gator runs side
//! by side with Sidekiq, BullMQ and the rest.
//!
//! Modes: `single`, `bulk`, `concurrent` (enqueue rates); `process` (N queued jobs through a
//! worker at concurrency `GATOR_BENCH_CONCURRENCY`, 10 by default); `latency-worker` + `latency-enqueue` (end-to-end latency, run as
//! two processes); `backlog` (process rate with 5k, 50k, 500k and 5M jobs queued);
//! `limited` and `rated` (`process` on a queue with a concurrency limit with 3 keys, or a rate
//! limit, each above what the machine achieves: the cost of flow control's bookkeeping);
//! `single-floor` (Gator's awaited dispatch against bare sockets doing the same push); `soak`
//! (N jobs through a worker in a steady stream, with Redis's memory sampled: finished jobs'
//! status records are bounded by the retention); `workflow` (N steps of three-step workflows
//! against N plain jobs, dispatched and run: the overhead of a workflow step); `pages` (what a
//! page of a dead set costs with N entries in each of 20 queues, first and 90 % deep); `retry`
//! (how late N retries due 500 ms after their failure start); `scheduled` (N due jobs processed
//! with and without `GATOR_SCHEDULED` jobs scheduled a year ahead); `payloads` (Redis memory
//! per job and run rate for 1 KiB, 64 KiB and 1 MiB arguments, stored plain and compressed);
//! `sleepers` (N durable jobs parked by `ctx.sleep_until`, waking over 5 s: how late they
//! resume on Redis's clock, and Redis memory per sleeping job); `outbox` (the transactional
//! outbox's relay: N committed rows into Redis by one and two relays, and commit-to-queued
//! latency with `LISTEN/NOTIFY`; a private PostgreSQL unless `GATOR_BENCH_PG_URL`).
//!
//! Example: `cargo run --release -p gator-bench -- process 50000`.
//!
//! Each mode runs as a task on the runtime's worker threads, where an application's
//! dispatches run (a web handler, a job that dispatches another). `GATOR_BENCH_ON_MAIN=1` runs
//! it on the main thread instead, inside `block_on` as a `#[tokio::main]` body does: there
//! every reply must also wake that thread, two context switches per awaited dispatch
//! instead of one (`perf stat -e context-switches`).

mod cpu;
mod enqueue;
mod fanin;
mod floor;
mod measure;
mod modes;
mod outbox;
mod pages;
mod payloads;
mod retry;
mod scheduled;
mod sleepers;
mod soak;
mod worked;
mod workflow;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!(
            "usage: gator-bench MODE N\n  MODE: single | single-floor | bulk | concurrent | process | limited | rated | latency-worker | latency-enqueue | backlog | soak | workflow | pages | payloads | retry | scheduled | sleepers | outbox\n  reads REDIS_URL (default redis://127.0.0.1:6379); latency-worker creates READY_FILE once it waits"
        );
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("gator-bench: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mode = mode.clone();
    let outcome = if std::env::var("GATOR_BENCH_ON_MAIN").is_ok_and(|v| v == "1") {
        runtime.block_on(run(&mode, n))
    } else {
        runtime.block_on(async move {
            tokio::spawn(async move { run(&mode, n).await })
                .await
                .unwrap_or_else(|e| Err(anyhow::anyhow!("the benchmark task failed: {e}")))
        })
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gator-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `mode` with `n` jobs.
async fn run(mode: &str, n: usize) -> anyhow::Result<()> {
    modes::check_concurrency()?;
    use enqueue::{bulk, concurrent, enqueue_rate, latency_enqueue, single};
    use worked::{backlog, flow_process, latency_worker, process};
    match mode {
        "single" => enqueue_rate(mode, n, single(n)).await,
        "single-floor" => {
            let client = modes::client().await?;
            let dispatch = |i| async move {
                modes::job(i as usize, i).through(client).dispatch().await?;
                Ok(())
            };
            floor::single_floor(client, modes::QUEUE, n, dispatch).await
        }
        "bulk" => enqueue_rate(mode, n, bulk(n)).await,
        "concurrent" => enqueue_rate(mode, n, concurrent(n)).await,
        "latency-enqueue" => enqueue_rate(mode, n, latency_enqueue(n)).await,
        "process" => process(n).await,
        "limited" | "rated" => flow_process(mode, n).await,
        "latency-worker" => latency_worker(n).await,
        "backlog" => backlog(n).await,
        "soak" => soak::soak(n).await,
        "workflow" => workflow::workflow(n).await,
        "pages" => pages::pages(n).await,
        "payloads" => payloads::payloads(n).await,
        "retry" => retry::retry(n).await,
        "scheduled" => scheduled::scheduled(n).await,
        "sleepers" => sleepers::sleepers(n).await,
        "outbox" => outbox::outbox(n).await,
        other => anyhow::bail!("unknown mode {other:?}"),
    }
}
