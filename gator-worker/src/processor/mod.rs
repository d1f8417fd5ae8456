//! One processor: a loop that runs one job at a time. A worker runs `--concurrency` of them.
//! Each job goes through named steps, as Oban's executor does:
//!
//! 1. **fetch** it into this process's in-flight list ([`Fetcher`]);
//! 2. **gate**: what no worker could run goes to the dead set unrun; a job cancelled before it
//!    started, or outside its time windows, is settled as such without running;
//! 3. **resolve** the registered job its payload names, and its retry policy;
//! 4. **decode** its arguments, with its [`gator_core::Context`] (its reply, its workflow's parents);
//! 5. **prepare** its start: release a lock held until the start;
//! 6. **run** the body ([`crate::run`]);
//! 7. **classify** the result: cancelled, waiting for a reply, done, or a failure to retry or
//!    bury ([`crate::outcome`]);
//! 8. **settle** it: write the outcome ([`crate::settle`]), with the next job when it can.
//!
//! The job is in this process's in-flight list from the fetch on, and each outcome is one
//! write that takes it out and records the outcome together: if the process dies anywhere
//! in between, the job is still in flight and recovery puts it back in its queue.
//!
//! Steps 2 to 8 sit inside panic boundaries: a panic anywhere (a job
//! argument's `Deserialize`, a custom backoff, this crate) becomes the job's failure, recorded
//! with its reason, and the processor carries on. A processor never dies holding a job.

mod classify;
mod decode;
mod gate;
mod run;

use crate::clock::RedisClock;
use crate::fetcher::{Fetcher, Job, Start};
use crate::outcome::{self, Attempt, Failure, Outcome, Policy};
use crate::run::{catch_unwind, panic_message};
use crate::settle::{Next, Settler};
use gator_core::payload::PayloadDocument;
use gator_core::{Client, JobError, Registry, StateMap};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, error, info_span, warn};

/// Why an attempt ends before (or instead of) the usual classification of its result.
enum Early {
    /// Its outcome is known already.
    Outcome(Outcome),
    /// It failed, under this retry policy.
    Failed(Failure, Policy),
}

/// How long a job runs before its status record says `running`: long enough that a worker
/// draining short jobs writes no record for their start, short enough that a person looking at
/// a job sees it running. (Sidekiq's Busy page lags by up to its 5 s heartbeat.)
pub const MARK_RUNNING_AFTER: Duration = Duration::from_millis(100);

/// One of the worker's fixed pool of job runners.
pub struct Processor {
    /// Index in the pool, for logs.
    pub id: usize,
    /// Redis: its clock, the status records, the workflows' results, the payload limit.
    pub client: Client,
    /// The jobs this binary can run.
    pub registry: Arc<Registry>,
    /// Where jobs come from (shared by the pool).
    pub fetcher: Arc<Fetcher>,
    /// Writes each job's outcome (shared by the pool).
    pub settler: Arc<Settler>,
    /// Redis's clock as this process estimates it, for the stamps in failed payloads.
    pub clock: Arc<RedisClock>,
    /// The application's state, handed to jobs that take `State<T>`.
    pub states: StateMap,
    /// Cancelled when the worker's shutdown deadline comes: every running job's context is.
    pub deadline: CancellationToken,
    /// The jobs whose cancellation was asked for.
    pub cancels: Arc<crate::cancellation::Cancels>,
    /// The server middleware around each run; `None` without any.
    pub service: Option<crate::middleware::JobService>,
    /// Counts outcomes for the statistics in Redis and the metrics.
    pub observer: Arc<crate::observer::Observer>,
    /// The job catalogue: whether a job this worker does not run is run elsewhere.
    pub catalogue: Arc<crate::catalogue::Catalogue>,
    /// Where jobs' progress reports go (`ctx.progress`), shared by the worker.
    pub progress: gator_core::context::ProgressWriter,
    /// Where durable jobs save their state (`ctx.checkpoint`, `ctx.step`), shared by the worker.
    pub durable: gator_core::context::durable::DurableWriter,
    /// Cancelled when the worker begins to stop: an iterating job stops at its next item.
    pub stopping: CancellationToken,
}

impl Processor {
    /// Runs jobs until `stop` is cancelled; a job already started is always settled first.
    pub async fn run(self, stop: CancellationToken) {
        let mut failures = 0u32;
        let mut next = Next::Fetch(Start::Draw);
        loop {
            // 1. Fetch into the in-flight list (or take the job the last success took). Never
            //    cancelled mid-flight.
            let job = match std::mem::replace(&mut next, Next::Fetch(Start::Draw)) {
                Next::Job(job) => job,
                Next::Fetch(start) => match self.fetcher.next_from(&stop, start).await {
                    Ok(Some(job)) => job,
                    Ok(None) => break,
                    Err(e) => {
                        failures += 1;
                        let outage = self.fetcher.outage().failed(&e);
                        pause_after_fetch_error(failures, &stop, &e, outage).await;
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

    /// gate → resolve → decode → prepare → run → classify ([`Processor::attempt`]) → settle,
    /// each inside a panic boundary; returns what comes next.
    async fn process_one(&self, mut job: Job, stop: &CancellationToken) -> Next {
        let outcome = match catch_unwind(self.attempt(&job)).await {
            Ok((outcome, saved)) => {
                // A durable job's saves rewrote its payload in flight: it is settled by it.
                if let Some(payload) = saved {
                    job.fetched.raw = payload.into_bytes();
                }
                outcome
            }
            // A panic outside the body loses what a durable job saved here: its outcome is
            // written for the payload as fetched, finds it gone, and recovery puts the saved
            // one back as a stranded job.
            Err(panic) => self.after_panic(&job, &panic_message(&*panic)),
        };
        // Kept for a panic below: the job must then be let go of, so that recovery puts it back.
        let fetched = job.fetched.clone();
        match catch_unwind(self.settler.settle(job, outcome, stop)).await {
            Ok(next) => next,
            Err(panic) => {
                self.fetcher.settled(&fetched);
                error!(queue = %fetched.queue, panic = %panic_message(&*panic), "panicked while recording a job's outcome: the job stays in flight and is put back in its queue by recovery");
                Next::Fetch(Start::Draw)
            }
        }
    }

    /// gate → resolve → decode → prepare → run → classify, for one fetched job, in its span;
    /// returns its outcome, and the payload in flight if a durable job's saves changed it. The
    /// payload is parsed once, leniently; a failure rewrites only the fields it records.
    async fn attempt(&self, job: &Job) -> (Outcome, Option<String>) {
        let doc = match PayloadDocument::parse(&job.fetched.raw) {
            Ok(doc) => doc,
            Err(e) => return (outcome::malformed(&job.fetched, &e, &self.clock), None),
        };
        // Escaped: a payload pushed by another producer may carry a jid or a name with line
        // breaks or terminal escapes, which would forge log lines.
        let span = info_span!("job", jid = %gator_rules::escape(doc.jid()), job = %gator_rules::escape(doc.job()), queue = %job.fetched.queue, attempt = doc.attempt().saturating_add(1));
        // The child of the span it was dispatched in, if its headers carry a trace context.
        #[cfg(feature = "otel")]
        gator_core::otel::adopt_parent(&span, &doc.headers());
        // Times are read only for the metrics: without them a job pays two atomic adds.
        let timed = self.observer.metrics_on().then(|| {
            let waited = doc
                .enqueued_at_ms()
                .map(|due| Duration::from_millis(self.clock.now_ms().saturating_sub(due)));
            (std::time::Instant::now(), waited)
        });
        let (outcome, saved) = self.steps(&doc, job).instrument(span).await;
        let timing = timed.map(|(started, waited)| (started.elapsed(), waited));
        (self.observer).finished(&job.fetched.queue, doc.job(), &outcome, timing);
        (outcome, saved)
    }

    /// The steps between the fetch and the settle, in the job's span; with the payload a
    /// durable job's saves left in flight, which a failure is recorded in.
    async fn steps(&self, doc: &PayloadDocument<'_>, job: &Job) -> (Outcome, Option<String>) {
        let attempt = Attempt::now(&self.clock);
        let mut saved = None;
        let outcome = match self.try_steps(doc, job, attempt, &mut saved).await {
            Ok(outcome) | Err(Early::Outcome(outcome)) => outcome,
            Err(Early::Failed(failure, policy)) => {
                let latest = parse_saved(saved.as_deref());
                let doc = latest.as_ref().unwrap_or(doc);
                outcome::classify(doc, failure, policy, attempt, &self.clock)
            }
        };
        (outcome, saved)
    }

    /// Steps 2 to 7 in order; any of them may end the attempt early with its outcome, or with
    /// a failure for [`outcome::classify`].
    async fn try_steps(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
        attempt: Attempt,
        saved: &mut Option<String>,
    ) -> Result<Outcome, Early> {
        let started = self.gate(doc, job).await?;
        self.hand_back(doc, job).await?;
        let (registration, policy) = self.resolve(doc)?;
        let (ctx, execution) = self
            .decode(doc, job, registration, (policy, started))
            .await?;
        self.prepare(doc, job).await;
        let result = self
            .run_marked(doc, job, execution, registration.timeout, &ctx)
            .await;
        // The last progress it reported is written before its outcome (a load if none).
        ctx.finish_progress().await;
        *saved = ctx.durable_payload();
        let latest = parse_saved(saved.as_deref());
        let doc = latest.as_ref().unwrap_or(doc);
        self.classify(doc, job, result, &ctx, attempt, policy)
    }

    /// A panic outside the job body and its decoding (a custom backoff, this crate): the job
    /// is retried on the default policy, or dead-lettered if its payload cannot be read.
    fn after_panic(&self, job: &Job, message: &str) -> Outcome {
        let message = gator_rules::cut(message, gator_rules::MAX_ERROR_TEXT);
        error!(queue = %job.fetched.queue, panic = %message, "panicked while handling a job; recording it as a failure");
        let error = JobError::new(format!(
            "the worker panicked while handling the job: {message}"
        ));
        let attempt = Attempt::now(&self.clock);
        match PayloadDocument::parse(&job.fetched.raw) {
            Ok(doc) => {
                let raw = &job.fetched.raw;
                let clock = &self.clock;
                let recorded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    outcome::classify(&doc, Failure::Run(error), Policy::DEFAULT, attempt, clock)
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

/// The payload a durable job's saves left in flight, parsed: the one its outcome records.
fn parse_saved(saved: Option<&str>) -> Option<PayloadDocument<'_>> {
    saved.and_then(|text| PayloadDocument::parse(text.as_bytes()).ok())
}

/// Sleeps with capped exponential backoff after a fetch failed, waking early on shutdown.
async fn pause_after_fetch_error(
    failures: u32,
    stop: &CancellationToken,
    error: &gator_core::Error,
    outage: bool,
) {
    let delay = Duration::from_millis(100 * 2u64.pow(failures.min(6))).min(Duration::from_secs(5));
    if !outage {
        warn!(error = %error, retry_in_ms = delay.as_millis() as u64, "fetch failed");
    }
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        _ = stop.cancelled() => {}
    }
}
