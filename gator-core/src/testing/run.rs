//! One run of a recorded job in testing mode, as a worker runs it: its context on the mode's
//! clock, its arguments decoded, its body awaited. [`super::drain`] settles what it returns;
//! inline dispatches ([`super::dispatch`], [`super::journeys`]) fail with it.

use super::record::Recorded;
use super::{Mode, lock};
use crate::context::{Context, JobInfo};
use crate::failure::JobError;
use crate::job::Execution;
use crate::registry::Registry;
use crate::workflow::Parent;
use std::fmt;

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

/// What a run's context says of the chain or workflow its job is a step of.
#[derive(Default)]
pub(super) struct StepOf {
    /// The chain's id, for a chain's step.
    pub(super) chain_id: Option<String>,
    /// The workflow's id and the step's parents, for a workflow's step.
    pub(super) workflow: Option<(String, Vec<Parent>)>,
}

/// Runs `job` (a step of the chain or workflow `step` says) with its registration in
/// `registry`, with its context on the mode's clock.
pub(super) async fn run(registry: &Registry, mode: &Mode, job: &Recorded, step: StepOf) -> Outcome {
    let Some(registration) = registry.get(&job.job.job) else {
        let why = format!("no job named {:?} is registered", job.job.job);
        return Err(Failure::Unrunnable(why));
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
    let execution = (registration.run)(&job.job.args.to_string(), ctx)
        .map_err(|e| Failure::Unrunnable(format!("its arguments do not fit: {e}")))?;
    let result = match execution {
        Execution::Blocking(body) => body(),
        Execution::Async(body) => body.await,
    };
    result.map_err(Failure::Run)
}
