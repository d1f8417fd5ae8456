//! Step 6, run: the job body runs ([`crate::run::execute`]), through the server middleware if
//! any, with its status record marked `running` once it has run a while.

use super::{MARK_RUNNING_AFTER, Processor};
use crate::fetcher::Job;
use crate::run::execute;
use gator_core::payload::PayloadDocument;
use gator_core::{Context, Execution, JobResult};
use std::time::Duration;
use tokio_util::either::Either;
use tracing::debug;

impl Processor {
    /// Step 6, run: the job runs, with its status record set to `running` (`door::run`)
    /// once it has run [`MARK_RUNNING_AFTER`]: a shorter job goes from `queued` to `done` with no write of its
    /// own for the start (a status read meanwhile says `queued`), so the stream of short jobs a
    /// worker drains pays one write per job less. The record, stamped with the start, is sent
    /// while the job runs on; its reply is read before the outcome is written, on the same
    /// connection, so the outcome's record lands after it. A record that could not be written
    /// is only logged: the job runs all the same.
    pub(super) async fn run_marked(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
        execution: Execution,
        timeout: Option<Duration>,
        ctx: &Context,
    ) -> JobResult {
        let since = self.clock.now_ms();
        let mut body = std::pin::pin!(self.body(job, execution, timeout, ctx));
        tokio::select! {
            biased;
            result = &mut body => return result,
            () = tokio::time::sleep(MARK_RUNNING_AFTER) => {}
        }
        // From here on it can be cancelled while it runs (a shorter job reads `queued`, and a
        // cancel marks it for its start).
        let _running = self.cancels.running(doc.jid(), ctx);
        if ctx.started_at().is_some() {
            // A job with a deadline was recorded running as it was judged in time (gate).
            return body.await;
        }
        // Both are polled together, so the record's reply is read as it comes: a request left
        // unpolled while the job runs would count the whole run against its response timeout,
        // fail, and have the shared connection replaced under every other request.
        let (result, marked) = tokio::join!(body, self.mark_running(doc, job, since));
        if let Err(e) = marked {
            // Debug, not warn: at maxmemory this fails for every job, and the worker already
            // says loudly that Redis is full.
            debug!(error = %e, "could not record that the job started; its status shows it queued");
        }
        result
    }

    /// The body ([`execute`]), inside the server middleware if there is any.
    fn body<'a>(
        &self,
        job: &'a Job,
        execution: Execution,
        timeout: Option<Duration>,
        ctx: &'a Context,
    ) -> impl Future<Output = JobResult> + 'a {
        match &self.service {
            None => Either::Left(execute(execution, timeout, &job.slot, ctx)),
            Some(service) => {
                let (slot, run_ctx) = (job.slot.clone(), ctx.clone());
                let body = async move { execute(execution, timeout, &slot, &run_ctx).await };
                let run = gator_core::middleware::JobRun::new(ctx.clone(), body);
                Either::Right(crate::middleware::call(service.clone(), run))
            }
        }
    }

    /// Sets the job's status record to `running` since `since` (ms, Redis's clock).
    async fn mark_running(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
        since: u64,
    ) -> gator_core::Result<()> {
        let fetched = &job.fetched;
        let attempt = doc.attempt().saturating_add(1);
        crate::door::run(&self.client)
            .mark_running(
                (&fetched.queue, doc.jid()),
                &fetched.process,
                attempt,
                since,
            )
            .await
    }
}
