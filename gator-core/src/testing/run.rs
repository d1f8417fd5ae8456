//! One run of a recorded job in testing mode, as a worker runs it: its context on the mode's
//! clock, its arguments decoded, its body awaited. [`super::drain`] settles what it returns;
//! inline dispatches ([`super::dispatch`], [`super::journeys`]) fail with it.
//!
//! A durable job's saves (`ctx.checkpoint`, `ctx.step`, a sleep) are kept as a worker keeps
//! them, in the job's payload: the run's context saves through a sink that writes nothing
//! (there is no Redis) and keeps the rewritten payload, which the drain records with the job,
//! so its next run (a retry, a wake from a sleep, the next slice) resumes from it.

use super::record::Recorded;
use super::{Mode, lock};
use crate::context::durable::{DurableSink, DurableWriter, Save, Stored, Suspension};
use crate::context::{AwaitReply, Context, JobInfo};
use crate::failure::JobError;
use crate::job::Execution;
use crate::registry::Registry;
use crate::workflow::Parent;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

/// The most runs of one job an inline dispatch makes, so a job that yields its slice forever
/// ends (its sleeps are bounded by `MAX_SLEEPS`).
const MAX_INLINE_RUNS: usize = 10_000;

/// Why a run did not succeed.
#[derive(Debug)]
pub(super) enum Failure {
    /// The job ran and failed.
    Run(JobError),
    /// It could not run, and never will in this binary: not registered, or its arguments do
    /// not fit; it ends failed at once, as a worker sends it to the dead set.
    Unrunnable(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Run(error) => error.fmt(f),
            Failure::Unrunnable(why) => f.write_str(why),
        }
    }
}

/// What a run returned: its result (JSON), or why it did not succeed.
pub(super) type Outcome = std::result::Result<Option<String>, Failure>;

/// A run's end: what it returned, and what it left for the job's next run.
pub(super) struct Ran {
    /// What it returned.
    pub(super) outcome: Outcome,
    /// It slept or yielded its slice: the job is parked with this, whatever it returned.
    pub(super) suspension: Option<Suspension>,
    /// The payload with what it saved, if it saved anything: a retry resumes from it.
    pub(super) saved: Option<String>,
    /// It waits for a reply as a step (`ctx.wait_for_reply`): parked until
    /// [`super::Fake::reply`] or its timeout, whatever it returned.
    pub(super) waits: Option<AwaitReply>,
}

impl Ran {
    fn unrunnable(why: String) -> Ran {
        Ran {
            outcome: Err(Failure::Unrunnable(why)),
            suspension: None,
            saved: None,
            waits: None,
        }
    }
}

/// The testing mode's durable sink: nothing to write to, so every save is found done; the
/// run's context keeps the payload it rewrote ([`Context::durable_payload`]).
struct Kept;

impl DurableSink for Kept {
    fn save<'a>(
        &'a self,
        _: Save<'a>,
    ) -> Pin<Box<dyn Future<Output = crate::error::Result<Stored>> + Send + 'a>> {
        Box::pin(std::future::ready(Ok(Stored::Saved)))
    }
}

/// One writer for every run of the mode (a reference count each).
static KEPT: LazyLock<DurableWriter> = LazyLock::new(|| DurableWriter::new(Arc::new(Kept)));

/// What a run's context says of the chain or workflow its job is a step of.
#[derive(Default, Clone)]
pub(super) struct StepOf {
    /// The chain's id, for a chain's step.
    pub(super) chain_id: Option<String>,
    /// The workflow's id and the step's parents, for a workflow's step.
    pub(super) workflow: Option<(String, Vec<Parent>)>,
}

/// Runs `job` (a step of the chain or workflow `step` says) with its registration in
/// `registry`, with its context on the mode's clock.
pub(super) async fn run(registry: &Registry, mode: &Mode, job: &Recorded, step: StepOf) -> Ran {
    let Some(registration) = registry.get(&job.job.job) else {
        return Ran::unrunnable(format!("no job named {:?} is registered", job.job.job));
    };
    let info = JobInfo {
        jid: job.job.jid.clone(),
        job_name: job.job.job.clone(),
        queue: job.job.queue.clone(),
        attempt: job.job.attempt,
        created_at_ms: job.created_at_ms,
        enqueued_at_ms: crate::clock::to_ms(mode.now()),
        chain_id: step.chain_id,
    };
    let states = lock(&mode.states).clone();
    let ctx = Context::new(info, states, tokio_util::sync::CancellationToken::new());
    let ctx = match step.workflow {
        Some((id, parents)) => ctx.with_workflow(id, parents),
        None => ctx,
    };
    let ctx = ctx.with_durable(KEPT.clone(), "testing", &job.payload_text());
    let execution = match (registration.run)(&job.job.args.to_string(), ctx.clone()) {
        Ok(execution) => execution,
        Err(e) => return Ran::unrunnable(format!("its arguments do not fit: {e}")),
    };
    let result = match execution {
        Execution::Blocking(body) => body(),
        Execution::Async(body) => body.await,
    };
    Ran {
        outcome: result.map_err(Failure::Run),
        suspension: ctx.take_suspension(),
        saved: ctx.durable_payload(),
        waits: ctx.take_await_reply().filter(|request| request.resume),
    }
}

/// Runs `job` inline until it ends: a run that sleeps or yields its slice is run again at
/// once, resumed from what it saved (inline mode has no clock: it runs every job at its
/// dispatch, whatever its due time, and a sleep alike).
pub(super) async fn run_to_end(
    registry: &Registry,
    mode: &Mode,
    job: &Recorded,
    step: StepOf,
) -> Outcome {
    let mut job = job.clone();
    for _ in 0..MAX_INLINE_RUNS {
        let ran = run(registry, mode, &job, step.clone()).await;
        if let Some(wait) = ran.waits {
            return Err(Failure::Run(JobError::new(format!(
                "it waits for the reply to {:?}, which no one can send before an inline \
                 dispatch returns: test it in fake mode (`Fake::reply`)",
                wait.key
            ))));
        }
        match ran.suspension {
            Some(suspension) => job.payload = Some(suspension.payload),
            None => return ran.outcome,
        }
    }
    Err(Failure::Run(JobError::new(format!(
        "it suspended itself {MAX_INLINE_RUNS} times at its dispatch without ending"
    ))))
}
