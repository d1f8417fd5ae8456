//! The benchmark modes. Each prints one `RESULT` line (see `measure::report`).

use crate::measure::now_us;
use anyhow::{Context, bail};
use gator_core::{Client, job};
use gator_worker::{QueueSelection, WorkerConfig};
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub(crate) const QUEUE: &str = "bench";
pub(crate) const BATCH: usize = 1000;

pub(crate) static DONE: AtomicUsize = AtomicUsize::new(0);
pub(crate) static TARGET: AtomicUsize = AtomicUsize::new(usize::MAX);
pub(crate) static MEASURE_LATENCY: AtomicBool = AtomicBool::new(false);
pub(crate) static LATENCIES_US: Mutex<Vec<i64>> = Mutex::new(Vec::new());
pub(crate) static FINISHED: Notify = Notify::const_new();
pub(crate) static END: Mutex<Option<Instant>> = Mutex::new(None);
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
    job_done();
}

/// Counts one job run to its end, for [`wait_for_jobs`].
pub(crate) fn job_done() {
    if DONE.fetch_add(1, Ordering::AcqRel) + 1 == TARGET.load(Ordering::Acquire) {
        *END.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        FINISHED.notify_one();
    }
}

/// The queues the benchmark uses: `bench`, or with `GATOR_BENCH_QUEUES=N` (N > 1) the N queues
/// `bench0 … bench{N-1}`, which a cluster spreads over its masters by their names' hashes.
/// Jobs go to them in turn; the worker serves all of them with equal weights.
pub(crate) fn queues() -> &'static [String] {
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

/// The worker's concurrency in the modes that run one (`process`, `limited`, `rated`,
/// `backlog`, `latency-worker`) and the tasks of `concurrent`: `GATOR_BENCH_CONCURRENCY`, 10 by
/// default, as `run-all` passes its `CONC` to every peer. Checked before a run starts ([`check_concurrency`]).
pub(crate) fn concurrency() -> usize {
    static CONCURRENCY: OnceLock<usize> = OnceLock::new();
    *CONCURRENCY.get_or_init(|| {
        read_concurrency(std::env::var("GATOR_BENCH_CONCURRENCY").ok().as_deref())
            .unwrap_or(DEFAULT_CONCURRENCY)
    })
}

const DEFAULT_CONCURRENCY: usize = 10;
/// As many processors as the worker itself accepts.
const MAX_CONCURRENCY: usize = 10_000;

/// Stops the run before it starts if `GATOR_BENCH_CONCURRENCY` is set and out of range.
pub(crate) fn check_concurrency() -> anyhow::Result<()> {
    read_concurrency(std::env::var("GATOR_BENCH_CONCURRENCY").ok().as_deref()).map(drop)
}

/// `GATOR_BENCH_CONCURRENCY`'s value, or why it is not one.
fn read_concurrency(value: Option<&str>) -> anyhow::Result<usize> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(DEFAULT_CONCURRENCY);
    };
    match value.parse::<usize>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
        _ => bail!(
            "GATOR_BENCH_CONCURRENCY must be a whole number from 1 to {MAX_CONCURRENCY}, not {value:?}"
        ),
    }
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

pub(crate) fn progress(n: usize, what: &str) -> ProgressBar {
    // indicatif draws only on a terminal, so logs and run-all's captures stay clean.
    let bar = ProgressBar::new(n as u64).with_message(what.to_owned());
    if let Ok(style) = ProgressStyle::with_template("{msg:>12} {wide_bar} {pos}/{len} {per_sec}") {
        bar.set_style(style);
    }
    bar
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
    config.concurrency = concurrency();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_concurrency_is_bounded_and_defaults_to_ten() {
        assert_eq!(read_concurrency(None).unwrap(), 10);
        assert_eq!(read_concurrency(Some("")).unwrap(), 10);
        assert_eq!(read_concurrency(Some("100")).unwrap(), 100);
        for bad in ["0", "-3", "ten", "10001"] {
            let error = read_concurrency(Some(bad)).unwrap_err().to_string();
            assert!(error.contains("GATOR_BENCH_CONCURRENCY"), "{bad}: {error}");
        }
    }
}
