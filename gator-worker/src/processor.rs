//! One processor: a loop that runs one job at a time, `fetch → decode → run → ack | retry | kill`.
//! A worker runs `--concurrency` of them.

use crate::fetcher::{self, QueueOrder};
use gator_core::payload::{ChainLink, Payload, now_ms};
use gator_core::retry::{DEFAULT_RETRIES, default_backoff};
use gator_core::store::dead::DeadCap;
use gator_core::store::{self, queue::Fetched};
use gator_core::{Client, Execution, JobError, JobResult, Registry};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, error, info, info_span, warn};

/// Jobs fetched and not yet settled, by processor: what graceful shutdown puts back in its
/// queue when the shutdown timeout runs out. It also counts fetches in flight: a job put back
/// while another processor still blocks in a fetch could be popped by it and then lost with
/// the exiting process, so the launcher waits for that count to reach zero first.
#[derive(Debug, Default)]
pub struct InProgress {
    jobs: Mutex<HashMap<usize, Fetched>>,
    fetching: AtomicUsize,
}

/// Counts one fetch in flight until dropped.
struct FetchGuard<'a>(&'a AtomicUsize);

impl Drop for FetchGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl InProgress {
    fn fetch_started(&self) -> FetchGuard<'_> {
        self.fetching.fetch_add(1, Ordering::SeqCst);
        FetchGuard(&self.fetching)
    }

    /// How many processors are fetching (or putting back what they fetched as shutdown began).
    pub fn fetches_in_flight(&self) -> usize {
        self.fetching.load(Ordering::SeqCst)
    }

    fn start(&self, processor: usize, job: &Fetched) {
        self.lock().insert(processor, job.clone());
    }

    fn finish(&self, processor: usize) {
        self.lock().remove(&processor);
    }

    /// Takes every unsettled job out of the record.
    pub fn drain(&self) -> Vec<Fetched> {
        self.lock().drain().map(|(_, job)| job).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Fetched>> {
        // A poisoned lock only means a panic during an insert or remove of a whole entry.
        self.jobs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What happens to a job after its attempt.
#[derive(Debug)]
enum Outcome {
    /// It succeeded; if it is a chain step, its chain moves on.
    Done(Option<ChainLink>),
    /// It failed and runs again at `at_ms` (the payload records the failure).
    Retry { payload: Box<Payload>, at_ms: u64 },
    /// It will not run again: exhausted retries, bad input, or an unreadable payload.
    Dead { entry: String },
}

/// One of the worker's fixed pool of job runners.
pub struct Processor {
    /// Index in the pool, for logs and the in-progress record.
    pub id: usize,
    /// Where jobs come from and outcomes go.
    pub client: Client,
    /// The jobs this binary can run.
    pub registry: Arc<Registry>,
    /// The queues and their order.
    pub order: Arc<QueueOrder>,
    /// The shared record of unsettled jobs.
    pub in_progress: Arc<InProgress>,
    /// How much of each dead set to keep.
    pub dead_cap: DeadCap,
}

impl Processor {
    /// Runs jobs until `stop` is cancelled; a job already fetched is always settled first.
    pub async fn run(self, stop: CancellationToken) {
        let mut conn = None;
        let mut failures = 0u32;
        while !stop.is_cancelled() {
            // 1. A dedicated connection, held across fetches: a blocking pop must not share a
            //    socket with other commands, and each pool checkout costs a round trip.
            let dedicated = match conn.as_mut() {
                Some(c) => c,
                None => match self.client.dedicated_connection().await {
                    Ok(c) => conn.insert(c),
                    Err(e) => {
                        failures += 1;
                        pause_after_error(
                            failures,
                            &stop,
                            "cannot get a redis connection to fetch with",
                            &e,
                        )
                        .await;
                        continue;
                    }
                },
            };
            // 2. Fetch. Never cancelled mid-flight; the short block timeout bounds shutdown.
            let fetching = self.in_progress.fetch_started();
            let job = match fetcher::fetch(dedicated, &self.client, &self.order).await {
                Ok(Some(job)) => job,
                Ok(None) => continue,
                Err(e) => {
                    conn = None; // the connection may be broken: take a fresh one
                    failures += 1;
                    pause_after_error(failures, &stop, "fetch failed", &e).await;
                    continue;
                }
            };
            failures = 0;
            if stop.is_cancelled() {
                // Fetched as shutdown began: hand it back rather than start it now.
                self.put_back(&job).await;
                break;
            }
            // 3. Recorded as in progress before the fetch counts as done, so that shutdown
            //    always finds it in one place or the other.
            self.in_progress.start(self.id, &job);
            drop(fetching);
            self.process_one(&job).await;
            self.in_progress.finish(self.id);
        }
        debug!(processor = self.id, "processor stopped");
    }

    /// decode → run → ack | retry | kill, then writes the outcome (retrying while Redis is away).
    async fn process_one(&self, job: &Fetched) {
        let outcome = match Payload::from_json(&job.raw) {
            Ok(payload) => self.run_payload(payload, &job.raw).await,
            Err(e) => {
                error!(queue = %job.queue, error = %e, "malformed payload: moved to the dead set verbatim");
                Outcome::Dead {
                    entry: malformed_entry(job, &e.to_string()),
                }
            }
        };
        self.write_outcome(job, outcome).await;
    }

    async fn run_payload(&self, mut payload: Payload, raw: &str) -> Outcome {
        let span = info_span!("job", jid = %payload.jid, job = %payload.job, queue = %payload.queue, attempt = payload.attempt + 1);
        async move {
            let started = Instant::now();
            let started_ms = now_ms();
            let Some(registration) = self.registry.get(&payload.job) else {
                let reason = format!(
                    "no job named {:?} is registered in this worker",
                    payload.job
                );
                let policy = Policy {
                    retries: DEFAULT_RETRIES,
                    backoff: default_backoff,
                };
                return failed(payload, JobError::new(reason), policy, started, started_ms);
            };
            let policy = Policy {
                retries: registration.retries,
                backoff: registration.backoff,
            };
            let execution = match (registration.run)(payload.args.clone()) {
                Ok(execution) => execution,
                Err(e) => {
                    let reason = format!("arguments do not fit job {:?}: {e}", payload.job);
                    // Keep the text exactly as it came, for whoever fixes the producer.
                    payload
                        .extra
                        .insert("raw".to_owned(), serde_json::Value::String(raw.to_owned()));
                    return failed(
                        payload,
                        JobError::discard(reason),
                        policy,
                        started,
                        started_ms,
                    );
                }
            };
            info!("job started");
            match run(execution, registration.timeout).await {
                Ok(()) => {
                    info!(
                        duration_ms = elapsed_ms(started),
                        outcome = "done",
                        "job finished"
                    );
                    Outcome::Done(payload.chain)
                }
                Err(e) => failed(payload, e, policy, started, started_ms),
            }
        }
        .instrument(span)
        .await
    }

    /// Writes the outcome, retrying with capped backoff while Redis is unreachable: a job that
    /// ran must not be forgotten because Redis blinked.
    async fn write_outcome(&self, job: &Fetched, outcome: Outcome) {
        let mut delay = Duration::from_millis(100);
        loop {
            let mut conn = self.client.connection();
            let keys = self.client.keys();
            let written = match &outcome {
                Outcome::Done(None) => Ok(()),
                Outcome::Done(Some(link)) => {
                    store::chain::advance(&mut conn, keys, link).await.map(drop)
                }
                Outcome::Retry { payload, at_ms } => {
                    store::dead::retry_at(&mut conn, keys, &job.queue, &payload.to_json(), *at_ms)
                        .await
                }
                Outcome::Dead { entry } => {
                    store::dead::kill(&mut conn, keys, &job.queue, entry, now_ms(), self.dead_cap)
                        .await
                        .map(drop)
                }
            };
            match written {
                Ok(()) => return,
                Err(e) => {
                    warn!(queue = %job.queue, error = %e, "cannot record a job's outcome; trying again");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    async fn put_back(&self, job: &Fetched) {
        if let Err(e) =
            store::queue::requeue(&mut self.client.connection(), self.client.keys(), job).await
        {
            error!(queue = %job.queue, error = %e, payload = %job.raw, "could not put a fetched job back");
        }
    }
}

/// A job's retry policy, from its `#[job]` options.
#[derive(Clone, Copy)]
struct Policy {
    retries: u32,
    backoff: fn(u32) -> Duration,
}

/// Records a failure in the payload and decides: another attempt later, or the dead set.
fn failed(
    mut payload: Payload,
    error: JobError,
    policy: Policy,
    started: Instant,
    started_ms: u64,
) -> Outcome {
    let now = now_ms();
    let failures = payload.attempt + 1;
    if payload.attempt > 0 {
        payload.retried_at = Some(started_ms);
    }
    payload.attempt = failures;
    payload.error = Some(error.message().to_owned());
    payload.failed_at = Some(now);
    if error.is_retryable() && failures <= policy.retries {
        let at_ms = now + (policy.backoff)(failures).as_millis() as u64;
        payload.enqueued_at = at_ms;
        warn!(duration_ms = elapsed_ms(started), outcome = "retry", error = %error, retry_in_ms = at_ms - now, "job failed; will retry");
        Outcome::Retry {
            payload: Box::new(payload),
            at_ms,
        }
    } else {
        let why = if error.is_retryable() {
            "retries exhausted"
        } else {
            "not retryable"
        };
        error!(duration_ms = elapsed_ms(started), outcome = "dead", error = %error, why, "job failed; moved to the dead set");
        Outcome::Dead {
            entry: payload.to_json(),
        }
    }
}

/// Runs a job body where it belongs (a blocking thread for sync jobs, a task for async ones),
/// turning a panic into a failure so the processor carries on. Past `timeout` an async job is
/// cancelled; a sync job's thread cannot be stopped, so it runs on with its result ignored.
pub async fn run(execution: Execution, timeout: Option<Duration>) -> JobResult {
    let mut handle = match execution {
        Execution::Blocking(body) => tokio::task::spawn_blocking(body),
        Execution::Async(body) => tokio::spawn(body),
    };
    let joined = match timeout {
        None => handle.await,
        Some(limit) => match tokio::time::timeout(limit, &mut handle).await {
            Ok(joined) => joined,
            Err(_) => {
                handle.abort();
                return Err(JobError::new(format!("job timed out after {limit:?}")));
            }
        },
    };
    match joined {
        Ok(result) => result,
        Err(e) if e.is_panic() => Err(JobError::new(format!(
            "job panicked: {}",
            panic_message(e.into_panic())
        ))),
        Err(e) => Err(JobError::new(format!("job was cancelled: {e}"))),
    }
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    match panic.downcast::<String>() {
        Ok(s) => *s,
        Err(panic) => panic.downcast_ref::<&str>().map_or_else(
            || "(non-string panic payload)".to_owned(),
            |s| (*s).to_owned(),
        ),
    }
}

/// A dead-set entry for text that is not a payload: a valid payload document recording the
/// reason, with the text kept verbatim in `raw` so nothing is lost.
fn malformed_entry(job: &Fetched, reason: &str) -> String {
    let now = now_ms();
    let mut entry = Payload::new("", &job.queue, serde_json::Value::Array(Vec::new()));
    entry.error = Some(format!("malformed payload: {reason}"));
    entry.failed_at = Some(now);
    entry
        .extra
        .insert("raw".to_owned(), serde_json::Value::String(job.raw.clone()));
    entry.to_json()
}

/// Milliseconds since `started`, to the microsecond (so logs do not show float noise).
fn elapsed_ms(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0
}

/// Sleeps with capped exponential backoff after a Redis error, waking early on shutdown.
async fn pause_after_error(
    failures: u32,
    stop: &CancellationToken,
    what: &str,
    error: &gator_core::Error,
) {
    let delay = Duration::from_millis(100 * 2u64.pow(failures.min(6))).min(Duration::from_secs(5));
    warn!(error = %error, retry_in_ms = delay.as_millis() as u64, "{what}");
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        _ = stop.cancelled() => {}
    }
}
