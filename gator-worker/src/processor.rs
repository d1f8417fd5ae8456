//! One processor: a loop that runs one job at a time, `fetch → decode → run → ack | retry | kill`.
//! A worker runs `--concurrency` of them.
//!
//! The job is in this process's in-flight list from the fetch on, and each outcome is one
//! script that takes it out and records the outcome together: if the process dies anywhere
//! in between, the job is still in flight and recovery puts it back in its queue.

use crate::fetcher::Fetcher;
use gator_core::payload::{ChainLink, Payload, PayloadView, now_ms};
use gator_core::retry::{DEFAULT_RETRIES, default_backoff};
use gator_core::store::dead::DeadCap;
use gator_core::store::inflight::{self, Fetched};
use gator_core::{Client, Execution, JobError, JobResult, Registry};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, error, info, info_span, warn};

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
    /// Index in the pool, for logs.
    pub id: usize,
    /// Where outcomes go.
    pub client: Client,
    /// The jobs this binary can run.
    pub registry: Arc<Registry>,
    /// Where jobs come from (shared by the pool).
    pub fetcher: Arc<Fetcher>,
    /// How much of each dead set to keep.
    pub dead_cap: DeadCap,
}

impl Processor {
    /// Runs jobs until `stop` is cancelled; a job already started is always settled first.
    pub async fn run(self, stop: CancellationToken) {
        let mut conn = None;
        let mut failures = 0u32;
        while !stop.is_cancelled() {
            // 1. A dedicated connection for blocking waits, held across fetches: a blocking
            //    command must not share a socket with others, and each checkout costs a round trip.
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
            // 2. Fetch into the in-flight list. Never cancelled mid-flight.
            let job = match self.fetcher.fetch(dedicated).await {
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
                // Fetched as shutdown began: leave it in flight; the launcher puts this
                // process's in-flight jobs back at the head of their queues before it exits.
                break;
            }
            self.process_one(&job).await;
            self.fetcher.settled(&job);
        }
        debug!(processor = self.id, "processor stopped");
    }

    /// decode → run → ack | retry | kill, then writes the outcome (retrying while Redis is away).
    async fn process_one(&self, job: &Fetched) {
        let outcome = match PayloadView::parse(&job.raw) {
            Ok(view) => self.run_job(view, job).await,
            Err(e) => malformed(job, &e),
        };
        self.write_outcome(job, outcome).await;
    }

    /// decode → run → the outcome. Reads only the fields running needs, borrowed; the whole
    /// payload is parsed only to record a failure.
    async fn run_job(&self, view: PayloadView<'_>, job: &Fetched) -> Outcome {
        let span = info_span!("job", jid = %view.jid, job = %view.job, queue = %job.queue, attempt = view.attempt + 1);
        async move {
            let started = Instant::now();
            let attempt = Attempt {
                started,
                started_ms: now_ms(),
                keep_raw: false,
            };
            let Some(registration) = self.registry.get(&view.job) else {
                let reason = format!("no job named {:?} is registered in this worker", view.job);
                let policy = Policy {
                    retries: DEFAULT_RETRIES,
                    backoff: default_backoff,
                };
                return fail(job, JobError::new(reason), policy, attempt);
            };
            let policy = Policy {
                retries: registration.retries,
                backoff: registration.backoff,
            };
            let execution = match (registration.run)(view.args.get()) {
                Ok(execution) => execution,
                Err(e) => {
                    let reason = format!("arguments do not fit job {:?}: {e}", view.job);
                    return fail(
                        job,
                        JobError::discard(reason),
                        policy,
                        Attempt {
                            keep_raw: true,
                            ..attempt
                        },
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
                    Outcome::Done(view.chain)
                }
                Err(e) => fail(job, e, policy, attempt),
            }
        }
        .instrument(span)
        .await
    }

    /// Settles the job with its outcome, retrying with capped backoff while Redis is
    /// unreachable: a job that ran must not be forgotten because Redis blinked.
    async fn write_outcome(&self, job: &Fetched, outcome: Outcome) {
        let mut delay = Duration::from_millis(100);
        loop {
            let mut conn = self.client.connection();
            let keys = self.client.keys();
            let settled = match &outcome {
                Outcome::Done(link) => inflight::ack(&mut conn, keys, job, link.as_ref()).await,
                Outcome::Retry { payload, at_ms } => {
                    inflight::retry(&mut conn, keys, job, &payload.to_json(), *at_ms).await
                }
                Outcome::Dead { entry } => {
                    inflight::kill(&mut conn, keys, job, entry, now_ms(), self.dead_cap).await
                }
            };
            match settled {
                Ok(true) => return,
                Ok(false) => {
                    // Either an earlier attempt whose reply was lost did record the outcome, or
                    // the job was recovered as an orphan meanwhile (this process looked dead) and
                    // its queued copy will settle it. At least once, never lost, either way.
                    warn!(queue = %job.queue, "job was no longer in flight: an earlier write whose reply was lost recorded its outcome, or it was recovered and will run again");
                    return;
                }
                Err(e) => {
                    warn!(queue = %job.queue, error = %e, "cannot record a job's outcome; trying again");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

/// A job's retry policy, from its `#[job]` options.
#[derive(Clone, Copy)]
struct Policy {
    retries: u32,
    backoff: fn(u32) -> Duration,
}

/// When an attempt started, and whether its failure keeps the payload text verbatim.
#[derive(Clone, Copy)]
struct Attempt {
    started: Instant,
    started_ms: u64,
    keep_raw: bool,
}

/// A failure of `job`: parses its whole payload to record it (see [`failed`]). A payload whose
/// arguments did not fit keeps its text verbatim in `raw`, for whoever fixes the producer.
fn fail(job: &Fetched, error: JobError, policy: Policy, attempt: Attempt) -> Outcome {
    match Payload::from_json(&job.raw) {
        Ok(mut payload) => {
            if attempt.keep_raw {
                payload
                    .extra
                    .insert("raw".to_owned(), serde_json::Value::String(job.raw.clone()));
            }
            failed(payload, error, policy, attempt.started, attempt.started_ms)
        }
        Err(e) => malformed(job, &e),
    }
}

/// Text that is not a payload: to the dead set, verbatim.
fn malformed(job: &Fetched, e: &serde_json::Error) -> Outcome {
    error!(queue = %job.queue, error = %e, "malformed payload: moved to the dead set verbatim");
    Outcome::Dead {
        entry: malformed_entry(job, &e.to_string()),
    }
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
    let outcome = match execution {
        Execution::Blocking(body) => {
            let handle = tokio::task::spawn_blocking(body);
            let joined = match timeout {
                None => handle.await,
                Some(limit) => match tokio::time::timeout(limit, handle).await {
                    Ok(joined) => joined,
                    Err(_) => return Err(timed_out(limit)),
                },
            };
            joined.map_err(|e| {
                if e.is_panic() {
                    e.into_panic()
                } else {
                    Box::new(e.to_string())
                }
            })
        }
        // Run in place, not as a task of its own: no spawn and no cross-task wake-up per job.
        Execution::Async(body) => match timeout {
            None => CatchUnwind(body).await,
            Some(limit) => match tokio::time::timeout(limit, CatchUnwind(body)).await {
                Ok(outcome) => outcome,
                Err(_) => return Err(timed_out(limit)), // dropping the future cancels the job
            },
        },
    };
    outcome.unwrap_or_else(|panic| {
        Err(JobError::new(format!(
            "job panicked: {}",
            panic_message(panic)
        )))
    })
}

fn timed_out(limit: Duration) -> JobError {
    JobError::new(format!("job timed out after {limit:?}"))
}

/// Polls a job's future, turning a panic into an `Err` with the panic's payload, so one job's
/// panic is its own failure and not the processor's.
struct CatchUnwind(std::pin::Pin<Box<dyn Future<Output = JobResult> + Send>>);

impl Future for CatchUnwind {
    type Output = Result<JobResult, Box<dyn std::any::Any + Send>>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let body = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body.poll(cx))) {
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Ok(std::task::Poll::Ready(result)) => std::task::Poll::Ready(Ok(result)),
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
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
