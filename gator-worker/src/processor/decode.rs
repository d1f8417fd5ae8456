//! Steps 3 to 5, from a payload to the work to run: resolve the registered job it names,
//! decode its arguments with its context, and prepare its start.

use super::{Early, Processor};
use crate::fetcher::Job;
use crate::outcome::{Failure, Outcome, Policy};
use crate::run::panic_message;
use gator_core::payload::{DocumentError, PayloadDocument, aside, envelope};
use gator_core::unique::UniqueUntil;
use gator_core::{Context, Execution, JobError, JobInfo, JobRegistration};
use serde_json::value::RawValue;
use tracing::info;

/// How long a job handed back on a queue under flow control (or one this worker was meant to
/// pass over already) waits before it is on its queue again: long enough that this worker,
/// fetching again at once, does not take it straight back, and it is parked, not spun.
pub const HAND_BACK_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

impl Processor {
    /// Step 3, resolve: which registered job the payload names, and its retry policy. A job back
    /// in its queue because its wait for a reply failed (timed out) ends here: that attempt's
    /// failure, under the job's policy; not run.
    pub(super) fn resolve(
        &self,
        doc: &PayloadDocument<'_>,
    ) -> Result<(&'static JobRegistration, Policy), Early> {
        let Some(registration) = self.registry.get(doc.job()) else {
            let reason = format!("no job named {:?} is registered in this worker", doc.job());
            let failure = Failure::Run(JobError::new(reason));
            return Err(Early::Failed(failure, Policy::DEFAULT));
        };
        let policy = Policy::of(registration);
        if let Some(error) = doc.reply_failure() {
            return Err(Early::Failed(Failure::Run(JobError::new(error)), policy));
        }
        Ok((registration, policy))
    }

    /// Step 3, before resolving: a job this worker does not run, which a live worker elsewhere
    /// runs from this queue (the job catalogue says), goes back for that worker, unrun and
    /// with no attempt used: to the head of its queue, at once, and this worker passes over
    /// that job's name on this queue from now on ([`crate::queues::passing`]), so the job
    /// waits in place for a worker that runs it. On a queue under flow control, or for a name
    /// this worker was passing over already when the job's fetch was sent (a payload the
    /// script reads otherwise), it is parked in the scheduled set for [`HAND_BACK_DELAY`]
    /// instead, so it cannot bounce. A fetch sent before the name was added (it raced the
    /// first hand-back) hands it back to the head again: such fetches are few, so the job
    /// bounces at most once per fetch that was on its way. Only a job no live worker runs fails (in
    /// [`Processor::resolve`]), as before.
    pub(super) async fn hand_back(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
    ) -> Result<(), Early> {
        let list = &job.fetched.queue;
        if self.registry.get(doc.job()).is_some()
            || !self.catalogue.run_elsewhere(doc.job(), list).await
        {
            return Ok(());
        }
        let passing = self.fetcher.order().passing();
        // A name passed over already when this job's fetch was sent: parked. One added since
        // (another processor handed back the same job while this fetch was on its way) is
        // handed back again, to the head: a fetch sent before the name was added could not
        // pass over it.
        let parked = job.fetched.admitted
            || self.fetcher.order().is_controlled(list)
            || passing.passed_before(list, doc.job(), job.passing_seen)
            || !passing.add(list, doc.job());
        Err(Early::Outcome(if parked {
            Outcome::Reschedule {
                delay: HAND_BACK_DELAY,
            }
        } else {
            Outcome::HandBack
        }))
    }

    /// Step 4, decode: the job's context (with its reply, its workflow's parents' results, and
    /// for a job with a deadline its start on Redis's clock, `started`) and its arguments, into
    /// the work to run.
    pub(super) async fn decode(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
        registration: &JobRegistration,
        (policy, started): (Policy, Option<u64>),
    ) -> Result<(Context, Execution), Early> {
        let ctx = self.context(doc, &job.fetched);
        let ctx = match started {
            Some(at_ms) => ctx.with_started_at(at_ms),
            None => ctx,
        };
        let ctx = match doc.reply() {
            Some(reply) => ctx.with_reply(reply.to_owned()),
            None => ctx,
        };
        let ctx = self.in_workflow(ctx, doc).await.map_err(|e| {
            let reason = format!("could not read the results of its parents in its workflow: {e}");
            Early::Failed(Failure::Run(JobError::new(reason)), policy)
        })?;
        let max = self.client.max_payload();
        let aside = self.aside_args(doc, job, max, policy).await?;
        match decode_args(registration, doc, aside, ctx.clone(), max) {
            Ok(execution) => Ok((ctx, execution)),
            Err(reason) => Err(self.undecodable(doc, job, reason, policy)),
        }
    }

    /// Step 4, when the arguments do not decode: the job is unrunnable (dead with its reason,
    /// its payload kept). But arguments nested deeper than anything parses
    /// ([`envelope::MAX_DEPTH`]) make a dead entry no listing could read either: that payload
    /// is wrapped as one that does not parse ([`crate::outcome::malformed`]), with its jid and
    /// name, so it is listed, retried and deleted by its jid. Only a failure pays the scan.
    fn undecodable(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
        reason: String,
        policy: Policy,
    ) -> Early {
        if envelope::nesting(doc.args().get()) <= envelope::MAX_DEPTH {
            return Early::Failed(Failure::Unrunnable(reason), policy);
        }
        let deep = envelope::TooDeep {
            jid: Some(doc.jid().to_owned()),
            job: Some(doc.job().to_owned()),
            field: "args".to_owned(),
            cut_short: false,
        };
        let reason = DocumentError::TooDeep(Box::new(deep));
        Early::Outcome(crate::outcome::malformed(
            &job.fetched,
            &reason,
            &self.clock,
        ))
    }

    /// Step 4, for a job stored aside (`gator_core::payload::aside`) only: its arguments, read
    /// from its side key (one `GET`, in the slot of its queue), decoded up to `max` bytes.
    /// `None` for any other job, which pays the look at its `packed` field only if it has one.
    /// A key that cannot be read now is the attempt's failure (retried, the key kept); a key
    /// that is gone or unreadable makes the job unrunnable.
    async fn aside_args(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
        max: usize,
        policy: Policy,
    ) -> Result<Option<Box<RawValue>>, Early> {
        let Some(marker) = doc.packed_text().and_then(aside::marker) else {
            return Ok(None);
        };
        let unrunnable = |reason: String| Early::Failed(Failure::Unrunnable(reason), policy);
        let aside = crate::door::run(&self.client)
            .aside(&job.fetched.queue, doc.jid())
            .await;
        match aside {
            Ok(Some(bytes)) => aside::unpack(&marker, bytes, max).map(Some).map_err(|e| {
                unrunnable(format!("arguments of job {:?} unreadable: {e}", doc.job()))
            }),
            Ok(None) => Err(unrunnable(format!(
                "the arguments of job {:?} were stored aside and their key is gone",
                doc.job()
            ))),
            Err(e) => {
                let reason = format!("could not read the arguments stored aside: {e}");
                Err(Early::Failed(Failure::Run(JobError::new(reason)), policy))
            }
        }
    }

    /// Step 5, prepare: release the lock of a unique job that holds it until its start.
    pub(super) async fn prepare(&self, doc: &PayloadDocument<'_>, job: &Job) {
        if doc.unique_until() == Some(UniqueUntil::Start) {
            self.settler.release_unique(&job.fetched).await;
        }
        info!("job started");
    }

    /// The context of this attempt: who the job is, the app's state, cancellation at the
    /// attempt's timeout or the worker's shutdown deadline, and where a durable job saves.
    pub(super) fn context(
        &self,
        doc: &PayloadDocument<'_>,
        fetched: &crate::door::Fetched,
    ) -> Context {
        let queue = &fetched.queue;
        let info = JobInfo {
            jid: doc.jid().to_owned(),
            job_name: doc.job().to_owned(),
            queue: queue.to_owned(),
            attempt: doc.attempt().saturating_add(1),
            created_at_ms: doc.created_at_ms().unwrap_or(0),
            enqueued_at_ms: doc.enqueued_at_ms().unwrap_or(0),
            chain_id: doc.chain().map(|link| link.id),
        };
        Context::new(info, self.states.clone(), self.deadline.clone())
            .with_headers(doc.headers())
            .with_progress(self.progress.clone())
            .with_durable(self.durable.clone(), &fetched.process, doc.text())
            .with_stopping(self.stopping.clone())
    }

    /// `ctx` with its workflow and its parents' results, for a workflow step (one `HMGET` in
    /// the workflow's home slot when it has parents); any other job's `ctx` as it is.
    pub(super) async fn in_workflow(
        &self,
        ctx: Context,
        doc: &PayloadDocument<'_>,
    ) -> gator_core::Result<Context> {
        let Some(link) = doc.workflow() else {
            return Ok(ctx);
        };
        let found = crate::door::run(&self.client)
            .parents(&link.id, &link.parents)
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
}

/// Decodes the payload's arguments for `registration`, into the work to run with `ctx`; or
/// why they do not fit. Packed arguments are decoded first, up to `max` bytes; arguments read
/// aside (`aside`) are used as they are. A
/// `Deserialize` that panics is bad input too: the same bytes would panic again.
fn decode_args(
    registration: &JobRegistration,
    doc: &PayloadDocument<'_>,
    aside: Option<Box<RawValue>>,
    ctx: Context,
    max: usize,
) -> Result<Execution, String> {
    let args = match aside {
        Some(args) => std::borrow::Cow::Owned(args),
        None => doc
            .args_unpacked(max)
            .map_err(|e| format!("arguments of job {:?} unreadable: {e}", doc.job()))?,
    };
    let args = args.get();
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
