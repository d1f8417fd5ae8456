//! Step 7, classify: what the attempt's result means: cancelled, waiting for a reply, done, or
//! a failure to retry or bury ([`crate::outcome::classify`]).

use super::{Early, Processor};
use crate::fetcher::Job;
use crate::outcome::{self, Attempt, Failure, Outcome, Policy};
use gator_core::payload::PayloadDocument;
use gator_core::unique::UniqueUntil;
use gator_core::{CancelReason, Context, JobError, JobResult};
use std::time::Duration;
use tracing::info;

/// How soon a job that said it was interrupted ([`JobError::interrupted`]) runs again when its
/// worker is not stopping: soon, but not at once, so one that always says so does not spin.
const INTERRUPTED_AGAIN_IN: Duration = Duration::from_secs(1);

impl Processor {
    /// Step 7, classify: cancelled, interrupted by the shutdown (whatever it returned, unless it
    /// said it finished), waiting for a reply, done, or a failure to retry or bury.
    pub(super) fn classify(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
        result: JobResult,
        ctx: &Context,
        attempt: Attempt,
        policy: Policy,
    ) -> Result<Outcome, Early> {
        if ctx.is_cancel_requested() {
            let duration_ms = outcome::elapsed_ms(attempt.started);
            info!(duration_ms, outcome = "cancelled", "job cancelled");
            return Ok(self.cancelled(doc));
        }
        // It slept or yielded its slice: parked, whatever it returned (the sleep's `Err`).
        if let Some(suspension) = ctx.take_suspension() {
            let duration_ms = outcome::elapsed_ms(attempt.started);
            info!(duration_ms, outcome = "suspended", reason = %suspension.reason, "job suspended: it resumes at its time with what it saved");
            return Ok(Outcome::Suspend {
                payload: suspension.payload,
                wake: suspension.wake,
                reason: suspension.reason,
            });
        }
        // A durable job waits for a reply as a step: its run ends waiting, whatever it returned.
        let request = ctx.take_await_reply();
        if let Some(request) = request.as_ref().filter(|request| request.resume) {
            return self
                .awaiting(doc, &job.fetched.queue, request.clone())
                .map_err(|error| Early::Failed(Failure::Run(error), policy));
        }
        let result = match result {
            Err(error) => return Err(self.failed_or_interrupted(error, ctx, attempt, policy)),
            Ok(result) => result,
        };
        // Told of the shutdown while it ran, it may have stopped halfway, whatever it returned:
        // it runs again, unless it said its work is complete.
        if ctx.cut_short_by_shutdown() {
            let duration_ms = outcome::elapsed_ms(attempt.started);
            info!(
                duration_ms,
                outcome = "interrupted",
                "job interrupted by the worker's shutdown: it goes back to the head of its queue, its attempt not counted"
            );
            return Ok(Outcome::Interrupted);
        }
        // It returned `Ok` having asked to wait for a reply: its attempt ends waiting.
        if let Some(request) = request {
            return self
                .awaiting(doc, &job.fetched.queue, request)
                .map_err(|error| Early::Failed(Failure::Run(error), policy));
        }
        let duration_ms = outcome::elapsed_ms(attempt.started);
        info!(duration_ms, outcome = "done", "job finished");
        Ok(self.done(doc, result, attempt.started.elapsed()))
    }

    /// What an attempt that did not succeed comes to: interrupted, if the worker's shutdown
    /// deadline cancelled its context (whatever it returned), or it said so after that deadline
    /// (back to the head of its queue, its attempt not counted); put back a second later if it
    /// said it was interrupted otherwise; else a failure.
    fn failed_or_interrupted(
        &self,
        error: JobError,
        ctx: &Context,
        attempt: Attempt,
        policy: Policy,
    ) -> Early {
        // An iterating job stops at its next item once its worker begins to stop.
        let shutdown = ctx.cancel_reason() == Some(CancelReason::Shutdown)
            || (error.is_interrupted()
                && (self.deadline.is_cancelled() || self.stopping.is_cancelled()));
        let duration_ms = outcome::elapsed_ms(attempt.started);
        if shutdown {
            info!(duration_ms, outcome = "interrupted", error = %error, "job interrupted by the worker's shutdown: it goes back to the head of its queue, its attempt not counted");
            return Early::Outcome(Outcome::Interrupted);
        }
        if error.is_interrupted() {
            info!(duration_ms, outcome = "interrupted", error = %error, "job interrupted: it runs again in a second, its attempt not counted");
            return Early::Outcome(Outcome::Reschedule {
                delay: INTERRUPTED_AGAIN_IN,
            });
        }
        Early::Failed(Failure::Run(error), policy)
    }

    /// The outcome of a success that took `ran` (on this host's monotonic clock, from before
    /// its body started): what it returned, and its chain's or workflow's hand-off.
    pub(super) fn done(
        &self,
        doc: &PayloadDocument<'_>,
        result: Option<String>,
        ran: Duration,
    ) -> Outcome {
        Outcome::Done {
            handoff: crate::door::handoff_on_success(
                doc,
                result.as_deref(),
                self.settler.kept().retention,
            ),
            result,
            attempts: doc.attempt().saturating_add(1),
            at_ms: self.clock.now_ms(),
            unique_lock: doc.unique_until() == Some(UniqueUntil::Success),
            // Recorded running: as it was judged in time at its start (a job with a deadline,
            // `gate`), or once it had run a while (`run`; measured from before its body
            // started, so never short of the body's own time).
            keyed: doc.expires_at_ms().is_some() || ran >= super::MARK_RUNNING_AFTER,
        }
    }

    /// The outcome of an attempt that ends waiting for a reply.
    pub(super) fn awaiting(
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
        let record = crate::door::WaitRecord {
            wait: request.key.clone(),
            jid: doc.jid().to_owned(),
            queue: queue.to_owned(),
            timeout_ms: request.timeout.as_millis() as u64,
            payload: doc.text().to_owned(),
            then,
            ret: crate::door::retention_ms(self.settler.kept().retention),
            resume: request.resume,
        };
        Ok(Outcome::AwaitReply {
            record: serde_json::to_string(&record).map_err(|e| JobError::new(e.to_string()))?,
            key: request.key,
            timeout: request.timeout,
            resume: request.resume,
        })
    }

    /// The outcome of a job whose cancellation was asked for.
    pub(super) fn cancelled(&self, doc: &PayloadDocument<'_>) -> Outcome {
        let retention = self.settler.kept().retention;
        Outcome::Cancelled {
            jid: doc.jid().to_owned(),
            handoff: crate::door::handoff_on_end(doc.text(), "cancelled", retention),
        }
    }
}
