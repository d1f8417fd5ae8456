//! One processor: a loop that runs one job at a time, `fetch → decode → run → ack | retry |
//! kill`. A worker runs `--concurrency` of them.
//!
//! The job is in this process's in-flight list from the fetch on, and each outcome is one
//! script that takes it out and records the outcome together: if the process dies anywhere
//! in between, the job is still in flight and recovery puts it back in its queue.
//!
//! Decoding, running and settling sit inside one panic boundary: a panic anywhere (a job
//! argument's `Deserialize`, a custom backoff, this crate) becomes the job's failure, recorded
//! with its reason, and the processor carries on. A processor never dies holding a job.

use crate::clock::RedisClock;
use crate::fetcher::{AckAndNext, Fetcher, Job};
use crate::outcome::{self, Attempt, Outcome, Policy};
use crate::run::{catch_unwind, panic_message, run};
use crate::settle;
use gator_core::payload::PayloadDocument;
use gator_core::store::dead::DeadCap;
use gator_core::{Client, JobError, Registry};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, error, info, info_span, warn};

/// What a processor does after a job.
enum Next {
    /// Run this job, taken with the last one's ack.
    Job(Job),
    /// Fetch, trying this queue first if one was drawn already.
    Fetch(Option<String>),
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
    /// Redis's clock as this process estimates it, for the stamps in failed payloads.
    pub clock: Arc<RedisClock>,
}

impl Processor {
    /// Runs jobs until `stop` is cancelled; a job already started is always settled first.
    pub async fn run(self, stop: CancellationToken) {
        let mut failures = 0u32;
        let mut next = Next::Fetch(None);
        loop {
            // 1. Fetch into the in-flight list (or take the job the last ack fetched). Never
            //    cancelled mid-flight.
            let job = match std::mem::replace(&mut next, Next::Fetch(None)) {
                Next::Job(job) => job,
                Next::Fetch(first) => match self.fetcher.next_from(&stop, first).await {
                    Ok(Some(job)) => job,
                    Ok(None) => break,
                    Err(e) => {
                        failures += 1;
                        pause_after_error(failures, &stop, "fetch failed", &e).await;
                        continue;
                    }
                },
            };
            failures = 0;
            if stop.is_cancelled() {
                // Fetched as shutdown began: leave it in flight; the launcher puts this
                // process's in-flight jobs back at the head of their queues before it exits.
                break;
            }
            next = self.process_one(job, &stop).await;
        }
        debug!(processor = self.id, "processor stopped");
    }

    /// decode → run → ack | retry | kill, inside one panic boundary; returns what comes next.
    async fn process_one(&self, job: Job, stop: &CancellationToken) -> Next {
        let outcome = match catch_unwind(self.attempt(&job)).await {
            Ok(outcome) => outcome,
            Err(panic) => self.after_panic(&job, &panic_message(&*panic)),
        };
        // Kept for a panic below: the job must then be let go of, so that recovery puts it back.
        let fetched = job.fetched.clone();
        match catch_unwind(self.settle(job, outcome, stop)).await {
            Ok(next) => next,
            Err(panic) => {
                self.fetcher.settled(&fetched);
                error!(queue = %fetched.queue, panic = %panic_message(&*panic), "panicked while recording a job's outcome: the job stays in flight and is put back in its queue by recovery");
                Next::Fetch(None)
            }
        }
    }

    /// ack | retry | kill. A success fetches the next jobs in the same call when it can
    /// ([`Fetcher::ack_and_next`]). Otherwise the job's slot is given back as soon as the
    /// write is sent: a fetch that takes the slot goes out after it on the same connection, so
    /// Redis settles this job before it moves the next one in.
    async fn settle(&self, job: Job, outcome: Outcome, stop: &CancellationToken) -> Next {
        let (fetched, slot) = match &outcome {
            Outcome::Done(link) => {
                match self.fetcher.ack_and_next(job, link.as_ref(), stop).await {
                    AckAndNext::Settled(Some(next), _) => return Next::Job(next),
                    AckAndNext::Settled(None, first) => return Next::Fetch(first),
                    AckAndNext::NotTried(job) => (job.fetched, Some(job.slot)),
                    AckAndNext::Failed(fetched, e) => {
                        warn!(queue = %fetched.queue, error = %e, "cannot record a job's outcome; trying again");
                        (fetched, None)
                    }
                }
            }
            _ => (job.fetched, Some(job.slot)),
        };
        settle::write(&self.client, &fetched, &outcome, self.dead_cap, slot).await;
        self.fetcher.settled(&fetched);
        Next::Fetch(None)
    }

    /// decode → run → the outcome. The payload is parsed once, leniently; a failure rewrites
    /// only the fields it records.
    async fn attempt(&self, job: &Job) -> Outcome {
        let doc = match PayloadDocument::parse(&job.fetched.raw) {
            Ok(doc) => doc,
            Err(e) => return outcome::malformed(&job.fetched, &e, &self.clock),
        };
        let span = info_span!("job", jid = %doc.jid(), job = %doc.job(), queue = %job.fetched.queue, attempt = doc.attempt().saturating_add(1));
        self.run_job(&doc, job).instrument(span).await
    }

    async fn run_job(&self, doc: &PayloadDocument<'_>, job: &Job) -> Outcome {
        let attempt = Attempt {
            started: Instant::now(),
            started_ms: self.clock.now_ms(),
            keep_raw: false,
        };
        let raw = &job.fetched.raw;
        let fail = |error: JobError, policy: Policy, attempt: Attempt| {
            outcome::failed(doc, raw, &error, policy, attempt, &self.clock)
        };
        let Some(registration) = self.registry.get(doc.job()) else {
            let reason = format!("no job named {:?} is registered in this worker", doc.job());
            return fail(JobError::new(reason), Policy::DEFAULT, attempt);
        };
        let policy = Policy {
            retries: registration.retries,
            backoff: registration.backoff,
        };
        let keep_raw = Attempt {
            keep_raw: true,
            ..attempt
        };
        // A `Deserialize` that panics is bad input, like arguments that do not fit: the same
        // bytes would panic again, so the job goes to the dead set with its text.
        let args = doc.args().get();
        let decoded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (registration.run)(args)));
        let execution = match decoded {
            Ok(Ok(execution)) => execution,
            Ok(Err(e)) => {
                let reason = format!("arguments do not fit job {:?}: {e}", doc.job());
                return fail(JobError::discard(reason), policy, keep_raw);
            }
            Err(panic) => {
                let reason = format!(
                    "decoding the arguments of job {:?} panicked: {}",
                    doc.job(),
                    panic_message(&*panic)
                );
                return fail(JobError::discard(reason), policy, keep_raw);
            }
        };
        info!("job started");
        match run(execution, registration.timeout, &job.slot).await {
            Ok(()) => {
                info!(
                    duration_ms = outcome::elapsed_ms(attempt.started),
                    outcome = "done",
                    "job finished"
                );
                Outcome::Done(doc.chain())
            }
            Err(e) => fail(e, policy, attempt),
        }
    }

    /// A panic outside the job body and its decoding (a custom backoff, this crate): the job
    /// is retried on the default policy, or dead-lettered if its payload cannot be read.
    fn after_panic(&self, job: &Job, message: &str) -> Outcome {
        error!(queue = %job.fetched.queue, panic = %message, "panicked while handling a job; recording it as a failure");
        let error = JobError::new(format!(
            "the worker panicked while handling the job: {message}"
        ));
        let attempt = Attempt {
            started: Instant::now(),
            started_ms: self.clock.now_ms(),
            keep_raw: false,
        };
        match PayloadDocument::parse(&job.fetched.raw) {
            Ok(doc) => {
                let raw = &job.fetched.raw;
                let clock = &self.clock;
                let recorded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    outcome::failed(&doc, raw, &error, Policy::DEFAULT, attempt, clock)
                }));
                recorded.unwrap_or_else(|_| Outcome::Retry {
                    payload: String::from_utf8_lossy(raw).into_owned(),
                    delay: (Policy::DEFAULT.backoff)(1),
                })
            }
            Err(e) => outcome::malformed(&job.fetched, &e, &self.clock),
        }
    }
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
