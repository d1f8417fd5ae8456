//! One processor: a loop that runs one job at a time. A worker runs `--concurrency` of them.
//! Each job goes through named steps, as Oban's executor does:
//!
//! 1. **fetch** it into this process's in-flight list ([`Fetcher`]);
//! 2. **resolve** the registered job its payload names;
//! 3. **decode** its arguments, and make its [`Context`];
//! 4. **execute** the body ([`crate::run`]);
//! 5. **classify** the result: done, or a failure to retry or bury ([`crate::outcome`]);
//! 6. **settle** it: write the outcome ([`crate::settle`]), with the next job when it can.
//!
//! The job is in this process's in-flight list from the fetch on, and each outcome is one
//! script that takes it out and records the outcome together: if the process dies anywhere
//! in between, the job is still in flight and recovery puts it back in its queue.
//!
//! Steps 2 to 6 sit inside panic boundaries: a panic anywhere (a job
//! argument's `Deserialize`, a custom backoff, this crate) becomes the job's failure, recorded
//! with its reason, and the processor carries on. A processor never dies holding a job.

use crate::clock::RedisClock;
use crate::fetcher::{Fetcher, Job};
use crate::outcome::{self, Attempt, Failure, Outcome, Policy};
use crate::run::{catch_unwind, execute, panic_message};
use crate::settle::{Next, Settler};
use gator_core::payload::PayloadDocument;
use gator_core::unique::UniqueUntil;
use gator_core::{
    Client, Context, Execution, JobError, JobInfo, JobRegistration, Registry, StateMap,
};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::either::Either;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, error, info, info_span, warn};

/// How long a job runs before its status record says `running`: long enough that a worker
/// draining short jobs writes no record for their start, short enough that a person looking at
/// a job sees it running. (Sidekiq's Busy page lags by up to its 5 s heartbeat.)
pub const MARK_RUNNING_AFTER: Duration = Duration::from_millis(100);

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
}

impl Processor {
    /// Runs jobs until `stop` is cancelled; a job already started is always settled first.
    pub async fn run(self, stop: CancellationToken) {
        let mut failures = 0u32;
        let mut next = Next::Fetch(None);
        loop {
            // 1. Fetch into the in-flight list (or take the job the last success took). Never
            //    cancelled mid-flight.
            let job = match std::mem::replace(&mut next, Next::Fetch(None)) {
                Next::Job(job) => job,
                Next::Fetch(first) => match self.fetcher.next_from(&stop, first).await {
                    Ok(Some(job)) => job,
                    Ok(None) => break,
                    Err(e) => {
                        failures += 1;
                        pause_after_fetch_error(failures, &stop, &e).await;
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

    /// resolve → decode → execute → classify ([`Processor::attempt`]) → settle, each inside
    /// a panic boundary; returns what comes next.
    async fn process_one(&self, job: Job, stop: &CancellationToken) -> Next {
        let outcome = match catch_unwind(self.attempt(&job)).await {
            Ok(outcome) => outcome,
            Err(panic) => self.after_panic(&job, &panic_message(&*panic)),
        };
        // Kept for a panic below: the job must then be let go of, so that recovery puts it back.
        let fetched = job.fetched.clone();
        match catch_unwind(self.settler.settle(job, outcome, stop)).await {
            Ok(next) => next,
            Err(panic) => {
                self.fetcher.settled(&fetched);
                error!(queue = %fetched.queue, panic = %panic_message(&*panic), "panicked while recording a job's outcome: the job stays in flight and is put back in its queue by recovery");
                Next::Fetch(None)
            }
        }
    }

    /// resolve → decode → execute → classify, for one fetched job; returns its outcome. The
    /// payload is parsed once, leniently; a failure rewrites only the fields it records.
    async fn attempt(&self, job: &Job) -> Outcome {
        let doc = match PayloadDocument::parse(&job.fetched.raw) {
            Ok(doc) => doc,
            Err(e) => return outcome::malformed(&job.fetched, &e, &self.clock),
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
        let outcome = self.steps(&doc, job).instrument(span).await;
        let timing = timed.map(|(started, waited)| (started.elapsed(), waited));
        (self.observer).finished(&job.fetched.queue, doc.job(), &outcome, timing);
        outcome
    }

    async fn steps(&self, doc: &PayloadDocument<'_>, job: &Job) -> Outcome {
        let attempt = Attempt::now(&self.clock);
        let classify = |failure: Failure, policy: Policy| {
            outcome::classify(doc, failure, policy, attempt, &self.clock)
        };
        // What no worker could run goes to the dead set unrun, kept as it came.
        if let Some(reason) = self.unrunnable(doc, job) {
            return classify(Failure::Unrunnable(reason), Policy::DEFAULT);
        }
        // 0. Cancelled before it started (parked on a controlled queue, or fetched as the cancel
        //    came): settled as such, without running.
        if self.cancels.is_marked(doc.jid()) {
            info!("job cancelled before it started");
            return self.cancelled(doc);
        }
        // Its time windows: a job whose window closed while it waited goes to the next.
        if let Some(outcome) = self.outside_window(doc).await {
            return outcome;
        }
        // 1. Resolve: which registered job the payload names.
        let Some(registration) = self.registry.get(doc.job()) else {
            let reason = format!("no job named {:?} is registered in this worker", doc.job());
            return classify(Failure::Run(JobError::new(reason)), Policy::DEFAULT);
        };
        let policy = Policy::of(registration);
        // Back in its queue because its wait for a reply failed (timed out): that attempt's
        // failure, under the job's retry policy; not run.
        if let Some(error) = doc.reply_failure() {
            return classify(Failure::Run(JobError::new(error)), policy);
        }
        // 2. Decode the arguments, and give the job its context.
        let ctx = self.context(doc, &job.fetched.queue);
        let ctx = match doc.reply() {
            Some(reply) => ctx.with_reply(reply.to_owned()),
            None => ctx,
        };
        let ctx = match self.in_workflow(ctx, doc).await {
            Ok(ctx) => ctx,
            Err(e) => {
                let reason =
                    format!("could not read the results of its parents in its workflow: {e}");
                return classify(Failure::Run(JobError::new(reason)), policy);
            }
        };
        let execution = match decode(registration, doc, ctx.clone()) {
            Ok(execution) => execution,
            Err(reason) => return classify(Failure::Unrunnable(reason), policy),
        };
        // 3. Execute, first releasing the lock of a unique job that holds it until its start.
        if doc.unique_until() == Some(UniqueUntil::Start) {
            self.release_unique(&job.fetched).await;
        }
        info!("job started");
        let result = self
            .run_marked(doc, job, execution, registration.timeout, &ctx)
            .await;
        // 4. Classify: cancelled, done, or a failure to retry or bury.
        if ctx.is_cancel_requested() {
            info!(
                duration_ms = outcome::elapsed_ms(attempt.started),
                outcome = "cancelled",
                "job cancelled"
            );
            return self.cancelled(doc);
        }
        // It returned `Ok` having asked to wait for a reply: its attempt ends waiting.
        if result.is_ok()
            && let Some(request) = ctx.take_await_reply()
        {
            return match self.awaiting(doc, &job.fetched.queue, request) {
                Ok(outcome) => outcome,
                Err(error) => classify(Failure::Run(error), policy),
            };
        }
        match result {
            Ok(result) => {
                info!(
                    duration_ms = outcome::elapsed_ms(attempt.started),
                    outcome = "done",
                    "job finished"
                );
                Outcome::Done {
                    handoff: gator_core::store::inflight::handoff_on_success(
                        doc,
                        result.as_deref(),
                        self.settler.kept().retention,
                    ),
                    result,
                    attempts: doc.attempt().saturating_add(1),
                    at_ms: self.clock.now_ms(),
                    unique_lock: doc.unique_until() == Some(UniqueUntil::Success),
                }
            }
            Err(error) => classify(Failure::Run(error), policy),
        }
    }

    /// Why no worker could run this payload, if none could: over the size limit (pushed by
    /// a producer that does not check it), or a job name with control, invisible or
    /// bidirectional characters, which no `#[job]` can have.
    fn unrunnable(&self, doc: &PayloadDocument<'_>, job: &Job) -> Option<String> {
        let (bytes, max) = (job.fetched.raw.len(), self.client.max_payload());
        if bytes > max {
            return Some(format!(
                "the payload is {bytes} bytes, over this worker's limit of {max} \
                 (--max-payload, GATOR_MAX_PAYLOAD): not run"
            ));
        }
        gator_rules::job_name(doc.job()).err().map(|problem| {
            let name = gator_rules::cut(doc.job(), 100);
            format!(
                "invalid job name \"{}\": it {problem}; not run",
                gator_rules::escape(&name)
            )
        })
    }

    /// Releases the unique lock of a job that holds it until it starts. A lock that cannot
    /// be released now is only logged: its TTL ends it, and the job runs all the same.
    async fn release_unique(&self, fetched: &gator_core::store::inflight::Fetched) {
        let mut conn = self.client.connection();
        let keys = self.client.keys();
        if let Err(e) = gator_core::store::unique::release(&mut conn, keys, fetched).await {
            warn!(error = %e, "could not release the job's unique lock as it starts; its TTL will");
        }
    }

    /// Runs the job, with its status record set to `running` (`store::status`) once it has run
    /// [`MARK_RUNNING_AFTER`]: a shorter job goes from `queued` to `done` with no write of its
    /// own for the start (a status read meanwhile says `queued`), so the stream of short jobs a
    /// worker drains pays one write per job less. The record, stamped with the start, is sent
    /// while the job runs on; its reply is read before the outcome is written, on the same
    /// connection, so the outcome's record lands after it. A record that could not be written
    /// is only logged: the job runs all the same.
    async fn run_marked(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
        execution: gator_core::Execution,
        timeout: Option<std::time::Duration>,
        ctx: &Context,
    ) -> gator_core::JobResult {
        let since = self.clock.now_ms();
        let body = match &self.service {
            None => Either::Left(execute(execution, timeout, &job.slot, ctx)),
            Some(service) => {
                let (slot, run_ctx) = (job.slot.clone(), ctx.clone());
                let body = async move { execute(execution, timeout, &slot, &run_ctx).await };
                let run = gator_core::middleware::JobRun::new(ctx.clone(), body);
                Either::Right(crate::middleware::call(service.clone(), run))
            }
        };
        let mut body = std::pin::pin!(body);
        tokio::select! {
            biased;
            result = &mut body => return result,
            () = tokio::time::sleep(MARK_RUNNING_AFTER) => {}
        }
        // From here on it can be cancelled while it runs (a shorter job reads `queued`, and a
        // cancel marks it for its start).
        let _running = self.cancels.running(doc.jid(), ctx);
        let mut conn = self.client.connection();
        let fetched = &job.fetched;
        let mark = gator_core::store::status::mark_running(
            &mut conn,
            self.client.keys(),
            &fetched.queue,
            doc.jid(),
            &fetched.process,
            doc.attempt().saturating_add(1),
            since,
        );
        // Both are polled together, so the record's reply is read as it comes: a request left
        // unpolled while the job runs would count the whole run against its response timeout,
        // fail, and have the shared connection replaced under every other request.
        let (result, marked) = tokio::join!(body, mark);
        if let Err(e) = marked {
            // Debug, not warn: at maxmemory this fails for every job, and the worker already
            // says loudly that Redis is full.
            debug!(error = %e, "could not record that the job started; its status shows it queued");
        }
        result
    }

    /// `Some(Reschedule)` if the job has time windows and Redis's clock is outside them (a
    /// job that waited past its window's close is not run late). Only jobs with windows pay
    /// for the `TIME` call. If Redis cannot be asked, the job runs: it was admitted, and its
    /// dispatch put it inside a window.
    async fn outside_window(&self, doc: &PayloadDocument<'_>) -> Option<Outcome> {
        let windows = doc.windows()?;
        let now = match self.client.redis_time().await {
            Ok(now) => now,
            Err(e) => {
                warn!(error = %e, "cannot read Redis's clock to check the job's time windows; running it");
                return None;
            }
        };
        let next = windows.next_start(i64::try_from(now).ok()?)?;
        let delay = u64::try_from(next).ok()?.checked_sub(now)?;
        if delay == 0 {
            return None;
        }
        info!(
            delay_ms = delay,
            "outside the job's time windows: rescheduled to the next opening"
        );
        Some(Outcome::Reschedule {
            delay: Duration::from_millis(delay),
        })
    }

    /// The context of this attempt: who the job is, the app's state, and cancellation at the
    /// attempt's timeout or the worker's shutdown deadline.
    fn context(&self, doc: &PayloadDocument<'_>, queue: &str) -> Context {
        let info = JobInfo {
            jid: doc.jid().to_owned(),
            job_name: doc.job().to_owned(),
            queue: queue.to_owned(),
            attempt: doc.attempt().saturating_add(1),
            created_at_ms: doc.created_at_ms().unwrap_or(0),
            enqueued_at_ms: doc.enqueued_at_ms().unwrap_or(0),
            chain_id: doc.chain().map(|link| link.id),
        };
        Context::new(info, self.states.clone(), self.deadline.clone()).with_headers(doc.headers())
    }

    /// The outcome of an attempt that ends waiting for a reply.
    fn awaiting(
        &self,
        doc: &PayloadDocument<'_>,
        queue: &str,
        request: gator_core::reply::AwaitReply,
    ) -> Result<Outcome, JobError> {
        gator_core::reply::validate_key(&request.key).map_err(|e| JobError::new(e.to_string()))?;
        let then = request
            .then
            .transpose()
            .map_err(|e| JobError::new(format!("the reply's handler job: {e}")))?;
        info!(key = %request.key, timeout_ms = request.timeout.as_millis() as u64, "job awaits a reply");
        let record = gator_core::store::reply::WaitRecord {
            wait: request.key.clone(),
            jid: doc.jid().to_owned(),
            queue: queue.to_owned(),
            timeout_ms: request.timeout.as_millis() as u64,
            payload: doc.text().to_owned(),
            then,
            ret: gator_core::store::status::retention_ms(self.settler.kept().retention),
        };
        Ok(Outcome::AwaitReply {
            record: serde_json::to_string(&record).map_err(|e| JobError::new(e.to_string()))?,
            key: request.key,
            timeout: request.timeout,
        })
    }

    /// The outcome of a job whose cancellation was asked for.
    fn cancelled(&self, doc: &PayloadDocument<'_>) -> Outcome {
        let retention = self.settler.kept().retention;
        Outcome::Cancelled {
            jid: doc.jid().to_owned(),
            handoff: gator_core::store::inflight::handoff_on_end(
                doc.text(),
                "cancelled",
                retention,
            ),
        }
    }

    /// `ctx` with its workflow and its parents' results, for a workflow step (one `HMGET` in
    /// the workflow's home slot when it has parents); any other job's `ctx` as it is.
    async fn in_workflow(
        &self,
        ctx: Context,
        doc: &PayloadDocument<'_>,
    ) -> gator_core::Result<Context> {
        let Some(link) = doc.workflow() else {
            return Ok(ctx);
        };
        let mut conn = self.client.connection();
        let found = gator_core::store::workflow::parents(
            &mut conn,
            self.client.keys(),
            &link.id,
            &link.parents,
        )
        .await?;
        let parents = link
            .parents
            .iter()
            .zip(found)
            .map(|(jid, (record, result))| gator_core::workflow::Parent {
                jid: jid.clone(),
                job: record
                    .and_then(|r| serde_json::from_str::<serde_json::Value>(&r).ok())
                    .and_then(|r| r.get("job")?.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                result,
            })
            .collect();
        Ok(ctx.with_workflow(link.id, parents))
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

/// Decodes the payload's arguments for `registration`, into the work to run with `ctx`; or
/// why they do not fit. A `Deserialize` that panics is bad input too: the same bytes would
/// panic again.
fn decode(
    registration: &JobRegistration,
    doc: &PayloadDocument<'_>,
    ctx: Context,
) -> Result<Execution, String> {
    let args = doc.args().get();
    let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        (registration.run)(args, ctx)
    }));
    match decoded {
        Ok(Ok(execution)) => Ok(execution),
        Ok(Err(e)) => Err(format!("arguments do not fit job {:?}: {e}", doc.job())),
        Err(panic) => Err(format!(
            "decoding the arguments of job {:?} panicked: {}",
            doc.job(),
            panic_message(&*panic)
        )),
    }
}

/// Sleeps with capped exponential backoff after a fetch failed, waking early on shutdown.
async fn pause_after_fetch_error(
    failures: u32,
    stop: &CancellationToken,
    error: &gator_core::Error,
) {
    let delay = Duration::from_millis(100 * 2u64.pow(failures.min(6))).min(Duration::from_secs(5));
    warn!(error = %error, retry_in_ms = delay.as_millis() as u64, "fetch failed");
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        _ = stop.cancelled() => {}
    }
}
