//! The benchmark modes. Each prints one `RESULT` line (see `measure::report`).

use crate::measure::{now_us, peak_rss_mib, percentile_ms, report};
use anyhow::{Context, bail};
use gator_core::{Client, job};
use gator_worker::{QueueSelection, WorkerConfig};
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const QUEUE: &str = "bench";
const BATCH: usize = 1000;
const CONCURRENCY: usize = 10;

pub(crate) static DONE: AtomicUsize = AtomicUsize::new(0);
static TARGET: AtomicUsize = AtomicUsize::new(usize::MAX);
static MEASURE_LATENCY: AtomicBool = AtomicBool::new(false);
static LATENCIES_US: Mutex<Vec<i64>> = Mutex::new(Vec::new());
static FINISHED: Notify = Notify::const_new();
static END: Mutex<Option<Instant>> = Mutex::new(None);
static CLIENT: OnceLock<Client> = OnceLock::new();

/// The no-op job every peer runs: one integer argument (in latency mode, its enqueue time).
#[job(queue = "bench")]
pub(crate) async fn noop(arg: i64) {
    if MEASURE_LATENCY.load(Ordering::Relaxed) {
        let latency = now_us() - arg;
        LATENCIES_US
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(latency);
    }
    if DONE.fetch_add(1, Ordering::AcqRel) + 1 == TARGET.load(Ordering::Acquire) {
        *END.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        FINISHED.notify_one();
    }
}

/// The queues the benchmark uses: `bench`, or with `GATOR_BENCH_QUEUES=N` (N > 1) the N queues
/// `bench0 … bench{N-1}`, which a cluster spreads over its masters by their names' hashes.
/// Jobs go to them in turn; the worker serves all of them with equal weights.
fn queues() -> &'static [String] {
    static QUEUES: OnceLock<Vec<String>> = OnceLock::new();
    QUEUES.get_or_init(|| {
        let count = std::env::var("GATOR_BENCH_QUEUES")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(1);
        if count <= 1 {
            vec![QUEUE.to_owned()]
        } else {
            (0..count).map(|i| format!("{QUEUE}{i}")).collect()
        }
    })
}

/// Job `i` of a run, on its queue.
pub(crate) fn job(i: usize, arg: i64) -> gator_core::PendingJob<Noop> {
    let queues = queues();
    let call = Noop::call(arg);
    if queues.len() == 1 {
        call
    } else {
        call.queue(queues[i % queues.len()].clone())
    }
}

pub(crate) fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| gator_core::client::DEFAULT_REDIS_URL.to_owned())
}

pub(crate) async fn client() -> anyhow::Result<&'static Client> {
    if let Some(client) = CLIENT.get() {
        return Ok(client);
    }
    let client = Client::connect(&redis_url())
        .await
        .with_context(|| format!("connecting to {}", redis_url()))?;
    // `GATOR_BENCH_SHARDS=N` (N > 1) splits the one queue `bench` into N shards, which a
    // cluster spreads over its masters: the other way to scale one busy queue out.
    let shards = std::env::var("GATOR_BENCH_SHARDS")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| *n > 1);
    if let Some(shards) = shards {
        if queues().len() > 1 {
            bail!(
                "GATOR_BENCH_SHARDS shards the one queue `bench`: leave GATOR_BENCH_QUEUES unset"
            );
        }
        gator_core::Admin::new(client.clone())
            .set_shards(QUEUE, shards)
            .await?;
    }
    Ok(CLIENT.get_or_init(|| client))
}

/// Runs `mode` with `n` jobs.
pub async fn run(mode: &str, n: usize) -> anyhow::Result<()> {
    match mode {
        "single" => enqueue_rate(mode, n, single(n)).await,
        "single-floor" => {
            let client = client().await?;
            let dispatch = |i| async move {
                job(i as usize, i).dispatch_with(client).await?;
                Ok(())
            };
            crate::floor::single_floor(client, QUEUE, n, dispatch).await
        }
        "bulk" => enqueue_rate(mode, n, bulk(n)).await,
        "concurrent" => enqueue_rate(mode, n, concurrent(n)).await,
        "latency-enqueue" => enqueue_rate(mode, n, latency_enqueue(n)).await,
        "process" => process(n).await,
        "limited" | "rated" => flow_process(mode, n).await,
        "latency-worker" => latency_worker(n).await,
        "backlog" => backlog(n).await,
        "soak" => crate::soak::soak(n).await,
        "workflow" => crate::workflow::workflow(n).await,
        "pages" => crate::pages::pages(n).await,
        other => bail!("unknown mode {other:?}"),
    }
}

fn progress(n: usize, what: &str) -> ProgressBar {
    // indicatif draws only on a terminal, so logs and run-all's captures stay clean.
    let bar = ProgressBar::new(n as u64).with_message(what.to_owned());
    if let Ok(style) = ProgressStyle::with_template("{msg:>12} {wide_bar} {pos}/{len} {per_sec}") {
        bar.set_style(style);
    }
    bar
}

async fn enqueue_rate(
    mode: &str,
    n: usize,
    work: impl Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    client().await?;
    let t0 = Instant::now();
    work.await?;
    let secs = t0.elapsed().as_secs_f64();
    let rate = n as f64 / secs;
    report(
        format!(r#"{{"phase":"{mode}","n":{n},"secs":{secs:.4},"rate":{rate:.1}}}"#),
        format!("{mode}: {n} jobs in {secs:.3} s = {rate:.0} jobs/s"),
    );
    Ok(())
}

async fn single(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    let bar = progress(n, "single");
    for i in 0..n {
        job(i, i as i64).dispatch_with(client).await?;
        if i % BATCH == 0 {
            bar.set_position(i as u64);
        }
    }
    bar.finish_and_clear();
    Ok(())
}

async fn bulk(n: usize) -> anyhow::Result<()> {
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

/// N dispatches from 10 tasks at once: what pipelining over one multiplexed connection gives.
async fn concurrent(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|t| {
            let client = client.clone();
            let share = n / CONCURRENCY + usize::from(t < n % CONCURRENCY);
            tokio::spawn(async move {
                for i in 0..share {
                    job(i * CONCURRENCY + t, i as i64)
                        .dispatch_with(&client)
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

async fn latency_enqueue(n: usize) -> anyhow::Result<()> {
    let client = client().await?;
    for i in 0..n {
        job(i, now_us()).dispatch_with(client).await?;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// A worker running in this process on the bench queue.
pub(crate) struct RunningWorker {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl RunningWorker {
    /// Shuts the worker down and waits until it has: its in-flight jobs are back in the queue.
    pub(crate) async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        Ok(self.task.await?)
    }
}

pub(crate) fn start_worker() -> RunningWorker {
    start_worker_with(|_| {})
}

/// [`start_worker`] with the benchmark's config changed by `tune`.
pub(crate) fn start_worker_with(tune: impl FnOnce(&mut WorkerConfig)) -> RunningWorker {
    let mut config = WorkerConfig::new(redis_url());
    config.queues = match queues() {
        [one] => QueueSelection::Strict(vec![one.clone()]),
        many => QueueSelection::Weighted(many.iter().map(|q| (q.clone(), 1)).collect()),
    };
    config.concurrency = CONCURRENCY;
    tune(&mut config);
    let stop = CancellationToken::new();
    let worker = gator_worker::WorkerBuilder::from_config(config)
        .build()
        .expect("a valid worker")
        .run_until(stop.clone());
    let task = tokio::spawn(async move {
        if let Err(e) = worker.await {
            eprintln!("gator-bench: worker failed: {e}");
            std::process::exit(3);
        }
    });
    RunningWorker { stop, task }
}

/// Waits until `n` job bodies ran since the counters were reset; returns when the last one ran.
pub(crate) async fn wait_for_jobs(n: usize, what: &str) -> Instant {
    let bar = progress(n, what);
    loop {
        let done = DONE.load(Ordering::Acquire);
        bar.set_position(done as u64);
        if done >= n {
            break;
        }
        let _ = tokio::time::timeout(Duration::from_millis(100), FINISHED.notified()).await;
    }
    bar.finish_and_clear();
    END.lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or_else(Instant::now)
}

pub(crate) fn reset_counters(target: usize) {
    DONE.store(0, Ordering::Release);
    *END.lock().unwrap_or_else(|e| e.into_inner()) = None;
    TARGET.store(target, Ordering::Release);
}

async fn process(n: usize) -> anyhow::Result<()> {
    bulk(n).await?; // untimed: the backlog the worker starts on
    reset_counters(n);
    let t0 = Instant::now();
    let worker = start_worker();
    let end = wait_for_jobs(n, "process").await;
    let secs = end.duration_since(t0).as_secs_f64();
    let (rate, rss) = (n as f64 / secs, peak_rss_mib());
    report(
        format!(
            r#"{{"phase":"process","n":{n},"secs":{secs:.4},"rate":{rate:.1},"rss_mib":{rss:.1}}}"#
        ),
        format!(
            "process: {n} jobs in {secs:.3} s = {rate:.0} jobs/s at concurrency {CONCURRENCY}; peak RSS {rss:.1} MiB"
        ),
    );
    worker.stop().await
}

/// `process` on a queue under flow control, with controls that never bind, so the figure is
/// their bookkeeping alone: `limited`, a concurrency limit of 10,000 units with 3 limit keys
/// (shares of 40 %, 30 % and the default 30 %); `rated`, a rate limit of 10 million jobs a
/// second. Compare with `process` in the same run.
async fn flow_process(mode: &str, n: usize) -> anyhow::Result<()> {
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
    gator_core::store::flow::set(&mut client.connection(), client.keys(), QUEUE, &settings).await?;
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
    let (rate, rss) = (n as f64 / secs, peak_rss_mib());
    report(
        format!(
            r#"{{"phase":"{mode}","n":{n},"secs":{secs:.4},"rate":{rate:.1},"rss_mib":{rss:.1}}}"#
        ),
        format!(
            "{mode}: {n} jobs in {secs:.3} s = {rate:.0} jobs/s at concurrency {CONCURRENCY}; peak RSS {rss:.1} MiB"
        ),
    );
    worker.stop().await
}

async fn latency_worker(n: usize) -> anyhow::Result<()> {
    MEASURE_LATENCY.store(true, Ordering::Release);
    reset_counters(n);
    let _worker = start_worker();
    // Ready once this worker has registered and its processors had time to block in a fetch.
    let client = client().await?;
    let started = Instant::now();
    while gator_core::store::processes::all(&mut client.connection(), client.keys())
        .await?
        .is_empty()
    {
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
    let (p50, p99, rss) = (
        percentile_ms(&latencies, 50.0),
        percentile_ms(&latencies, 99.0),
        peak_rss_mib(),
    );
    report(
        format!(
            r#"{{"phase":"latency","n":{n},"p50_ms":{p50:.3},"p99_ms":{p99:.3},"rss_mib":{rss:.1}}}"#
        ),
        format!("latency: {n} jobs, p50 {p50:.3} ms, p99 {p99:.3} ms; peak RSS {rss:.1} MiB"),
    );
    Ok(())
}

/// Process rate with 5k, 50k, 500k and 5M jobs queued (or `GATOR_BACKLOGS`, comma-separated):
/// the worker processes `n` of them (all of a smaller backlog) each time.
async fn backlog(n: usize) -> anyhow::Result<()> {
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
        let rate = count as f64 / secs;
        report(
            format!(
                r#"{{"phase":"backlog","backlog":{size},"n":{count},"secs":{secs:.4},"rate":{rate:.1}}}"#
            ),
            format!("backlog {size}: {count} jobs in {secs:.3} s = {rate:.0} jobs/s"),
        );
        // Its in-flight jobs go back to the queue before the next backlog clears it.
        worker.stop().await?;
    }
    clear_queues(client).await
}

/// Empties the benchmark's queues (one `DEL` each: on a cluster they live on different nodes).
pub(crate) async fn clear_queues(client: &Client) -> anyhow::Result<()> {
    for queue in queues() {
        redis::cmd("DEL")
            .arg(client.keys().queue(queue))
            .query_async::<()>(&mut client.connection())
            .await?;
    }
    Ok(())
}
