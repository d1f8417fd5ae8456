//! What the worker tells the outside about the jobs it runs: the per-queue processed and failed
//! counts kept in Redis for the dashboard's graphs and `gator-worker stats`
//! (`Upkeep::flush_stats`), and, when metrics are on, the `metrics` facade's counters,
//! histograms and gauges (served to Prometheus by `--metrics-bind`).
//!
//! # What it costs a job
//! The Redis counts are two atomic adds per job in memory; a task writes them once a second,
//! one `MULTI` per queue that had work, so no job pays a round trip. The metrics are off unless
//! asked for ([`crate::WorkerBuilder::metrics`], or `--metrics-bind`); on, each job looks up its
//! `(queue, job)` handles in a read-locked map and updates them.
//!
//! # Metrics
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `gator_jobs_processed_total` | counter | queue, job | attempts that ended, whatever their outcome |
//! | `gator_jobs_failed_total` | counter | queue, job | attempts that failed |
//! | `gator_jobs_retried_total` | counter | queue, job | failures that will run again |
//! | `gator_jobs_dead_total` | counter | queue, job | jobs moved to the dead set |
//! | `gator_job_duration_seconds` | histogram | queue, job | how long attempts ran |
//! | `gator_job_wait_seconds` | histogram | queue, job | how long jobs waited from due to start |
//! | `gator_queue_depth` | gauge | queue | jobs waiting, sampled every 5 s |
//! | `gator_queue_latency_seconds` | gauge | queue | age of the oldest waiting job, sampled every 5 s |
//! | `gator_queue_parked` | gauge | queue | jobs held back by a limit, rate, share or no-overlap lock |
//! | `gator_limiter_waits_total` | counter | queue | times a worker found a rate limiter closed and slept until its next start |
//! | `gator_limiter_wait_seconds` | histogram | queue | how long those sleeps were |
//! | `gator_jobs_suspended_total` | counter | queue, job, kind | durable jobs' runs that ended parked: `kind` `sleep` (`ctx.sleep`, `sleep_until`) or `slice` (an iteration yielded its slice) |
//!
//! With them, the autoscaling gauges of [`crate::scaling_gauges`] (`gator_queue_backlog`,
//! `gator_queue_busy`, `gator_queue_capacity`, `gator_queue_suggested_workers`, …).
//! With `--outbox` (the `postgres` feature), the outbox relay's own series, described (with
//! their help text) in `outbox/relay.rs`: `gator_outbox_waiting`, `gator_outbox_dead`,
//! `gator_outbox_lag_seconds`, `gator_outbox_rows_per_second`, `gator_outbox_relayed_total`.

use crate::clock::RedisClock;
use crate::door::Counts;
use crate::outcome::Outcome;
use gator_core::Client;
use metrics::{Counter, Histogram};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How often the counts go to Redis.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// The counter of durable jobs' suspensions.
const SUSPENDED: &str = "gator_jobs_suspended_total";
/// How often the queue gauges are sampled (metrics on only).
pub const SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// One queue's counts since the last flush.
#[derive(Debug, Default)]
struct Pending {
    processed: AtomicU64,
    failed: AtomicU64,
}

/// The metric handles of one `(queue, job)`, registered once.
#[derive(Debug)]
struct JobMetrics {
    processed: Counter,
    failed: Counter,
    retried: Counter,
    dead: Counter,
    duration: Histogram,
    wait: Histogram,
}

impl JobMetrics {
    fn new(queue: &str, job: &str) -> JobMetrics {
        let labels = [("queue", queue.to_owned()), ("job", job.to_owned())];
        JobMetrics {
            processed: metrics::counter!("gator_jobs_processed_total", &labels),
            failed: metrics::counter!("gator_jobs_failed_total", &labels),
            retried: metrics::counter!("gator_jobs_retried_total", &labels),
            dead: metrics::counter!("gator_jobs_dead_total", &labels),
            duration: metrics::histogram!("gator_job_duration_seconds", &labels),
            wait: metrics::histogram!("gator_job_wait_seconds", &labels),
        }
    }
}

/// The metric handles of each `(queue, job)` seen.
type MetricsByJob = FxHashMap<(String, String), Arc<JobMetrics>>;

/// The worker's observer, shared by its processors.
#[derive(Debug, Default)]
pub struct Observer {
    pending: RwLock<FxHashMap<String, Arc<Pending>>>,
    /// `None` with metrics off.
    metrics: Option<RwLock<MetricsByJob>>,
    /// What the scaling gauges aim at ([`crate::scaling_gauges`]).
    scaling: gator_core::admin::ScalingPolicy,
}

impl Observer {
    /// An observer; `metrics` turns the `metrics` facade's series on.
    pub fn new(metrics: bool) -> Observer {
        Observer {
            pending: RwLock::default(),
            metrics: metrics.then(RwLock::default),
            scaling: gator_core::admin::ScalingPolicy::default(),
        }
    }

    /// This observer, its scaling gauges aiming at `policy` (`--scaling-target-latency`).
    pub fn with_scaling(mut self, policy: gator_core::admin::ScalingPolicy) -> Observer {
        self.scaling = policy;
        self
    }

    /// Whether the metrics are on.
    pub fn metrics_on(&self) -> bool {
        self.metrics.is_some()
    }

    /// Records an attempt of `job` on `queue` that ended with `outcome`; with metrics on,
    /// `timing` is how long it ran, and how long it waited from its due time to its start (if
    /// known).
    pub fn finished(
        &self,
        queue: &str,
        job: &str,
        outcome: &Outcome,
        timing: Option<(Duration, Option<Duration>)>,
    ) {
        let failed = match outcome {
            Outcome::Done { .. } | Outcome::AwaitReply { .. } => false,
            Outcome::Retry { .. } | Outcome::Dead { .. } | Outcome::Discard { .. } => true,
            // Not an attempt that ended: moved to its window, handed back, stopped by a cancel,
            // expired before it started, interrupted by a shutdown, or a durable job's run
            // that ended parked (it sleeps, or yielded its slice: counted apart).
            Outcome::Suspend { reason, .. } => {
                self.suspended(queue, job, reason);
                return;
            }
            Outcome::Reschedule { .. }
            | Outcome::HandBack
            | Outcome::Cancelled { .. }
            | Outcome::Expired { .. }
            | Outcome::Interrupted => {
                return;
            }
        };
        let pending = self.pending_of(queue);
        pending.processed.fetch_add(1, Ordering::Relaxed);
        if failed {
            pending.failed.fetch_add(1, Ordering::Relaxed);
        }
        let Some(metrics) = self.metrics_of(queue, job) else {
            return;
        };
        metrics.processed.increment(1);
        if let Some((ran, waited)) = timing {
            metrics.duration.record(ran.as_secs_f64());
            if let Some(waited) = waited {
                metrics.wait.record(waited.as_secs_f64());
            }
        }
        if failed {
            metrics.failed.increment(1);
        }
        match outcome {
            Outcome::Retry { .. } => metrics.retried.increment(1),
            Outcome::Dead { .. } => metrics.dead.increment(1),
            _ => {}
        }
    }

    /// Records that a worker found `queue`'s rate limiter closed and sleeps `wait` until its
    /// next start.
    pub fn limiter_wait(&self, queue: &str, wait: Duration) {
        if self.metrics.is_some() {
            let labels = [("queue", queue.to_owned())];
            metrics::counter!("gator_limiter_waits_total", &labels).increment(1);
            metrics::histogram!("gator_limiter_wait_seconds", &labels).record(wait.as_secs_f64());
        }
    }

    /// Records that a run of durable `job` on `queue` ended parked for `reason` (`sleep 2`,
    /// `slice 3`): `gator_jobs_suspended_total`, by kind.
    fn suspended(&self, queue: &str, job: &str, reason: &str) {
        if self.metrics.is_none() {
            return;
        }
        // Described at the first use: the recorder (`--metrics-bind`'s) is installed by then.
        static DESCRIBED: std::sync::Once = std::sync::Once::new();
        DESCRIBED.call_once(|| {
            metrics::describe_counter!(
                SUSPENDED,
                "Runs of durable jobs that ended parked until their time, holding no processor: kind=sleep (ctx.sleep, sleep_until) or kind=slice (an iteration yielded its slice and went back to its queue)"
            );
        });
        let kind = if reason.starts_with("slice") {
            "slice"
        } else {
            "sleep"
        };
        let labels = [
            ("queue", queue.to_owned()),
            ("job", job.to_owned()),
            ("kind", kind.to_owned()),
        ];
        metrics::counter!(SUSPENDED, &labels).increment(1);
    }

    fn pending_of(&self, queue: &str) -> Arc<Pending> {
        if let Some(pending) = read(&self.pending).get(queue) {
            return pending.clone();
        }
        write(&self.pending)
            .entry(queue.to_owned())
            .or_default()
            .clone()
    }

    fn metrics_of(&self, queue: &str, job: &str) -> Option<Arc<JobMetrics>> {
        let map = self.metrics.as_ref()?;
        let key = (queue.to_owned(), job.to_owned());
        if let Some(handles) = read(map).get(&key) {
            return Some(handles.clone());
        }
        Some(
            write(map)
                .entry(key)
                .or_insert_with(|| Arc::new(JobMetrics::new(queue, job)))
                .clone(),
        )
    }

    /// Takes the counts gathered since the last call, per queue.
    fn take(&self) -> Vec<(String, Counts)> {
        read(&self.pending)
            .iter()
            .map(|(queue, pending)| {
                let counts = Counts {
                    processed: pending.processed.swap(0, Ordering::Relaxed),
                    failed: pending.failed.swap(0, Ordering::Relaxed),
                };
                (queue.clone(), counts)
            })
            .filter(|(_, counts)| !counts.is_empty())
            .collect()
    }

    /// Gives back counts a flush could not write, for the next one.
    fn give_back(&self, queue: &str, counts: Counts) {
        let pending = self.pending_of(queue);
        pending
            .processed
            .fetch_add(counts.processed, Ordering::Relaxed);
        pending.failed.fetch_add(counts.failed, Ordering::Relaxed);
    }

    /// Writes the gathered counts to Redis, bucketed on `clock` (Redis time as this process
    /// estimates it); what cannot be written now is kept for the next flush.
    pub async fn flush(&self, client: &Client, clock: &RedisClock) {
        let now = clock.now_ms();
        for (queue, counts) in self.take() {
            let written = crate::door::upkeep(client)
                .flush_stats(&queue, counts, now)
                .await;
            if let Err(e) = written {
                warn!(queue = %queue, error = %e, "could not record the queue's statistics; trying again in a second");
                self.give_back(&queue, counts);
            }
        }
    }

    /// Flushes every [`FLUSH_EVERY`] until `stop`, then once more; with metrics on, samples
    /// the gauges of `queues()` every [`SAMPLE_EVERY`].
    pub async fn run(
        self: Arc<Self>,
        client: Client,
        clock: Arc<RedisClock>,
        queues: impl Fn() -> Vec<String> + Send + 'static,
        stop: CancellationToken,
    ) {
        let mut ticks = 0u64;
        let samples_every = (SAMPLE_EVERY.as_millis() / FLUSH_EVERY.as_millis()).max(1) as u64;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(FLUSH_EVERY) => {}
                _ = stop.cancelled() => break,
            }
            self.flush(&client, &clock).await;
            if self.metrics_on() && ticks.is_multiple_of(samples_every) {
                let queues = queues();
                sample(&client, &queues).await;
                crate::scaling_gauges::sample(&client, &queues, self.scaling).await;
            }
            ticks += 1;
        }
        self.flush(&client, &clock).await;
    }
}

/// Sets the queue gauges of `queues` from their [`gator_core::admin::QueueInfo`].
async fn sample(client: &Client, queues: &[String]) {
    for queue in queues {
        let info = match gator_core::Admin::new(client.clone())
            .queue_info(queue)
            .await
        {
            Ok(info) => info,
            Err(e) => {
                warn!(queue = %queue, error = %e, "could not sample the queue for its metrics");
                continue;
            }
        };
        let labels = [("queue", queue.clone())];
        metrics::gauge!("gator_queue_depth", &labels).set(info.size as f64);
        metrics::gauge!("gator_queue_parked", &labels).set(info.parked as f64);
        let latency = info.latency_ms.unwrap_or(0) as f64 / 1000.0;
        metrics::gauge!("gator_queue_latency_seconds", &labels).set(latency);
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}
