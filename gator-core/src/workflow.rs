//! Workflows: jobs that run in stages, fanning out and back in. A stage runs once every step of
//! the stage before it has succeeded; its steps run in parallel, on any queues.
//!
//! ```no_run
//! # use gator_core::{job, Context, JobError, workflow::{Step, Workflow}};
//! # #[job] async fn fetch_order(id: u64) -> Result<u64, JobError> { Ok(id) }
//! # #[job(queue = "mail")] async fn email_buyer(id: u64) {}
//! # #[job] async fn charge_card(id: u64) {}
//! # #[job] async fn reserve_stock(id: u64) {}
//! # #[job] async fn ship(id: u64) {}
//! # async fn demo() -> gator_core::Result<()> {
//! let id = Workflow::new()
//!     .then(FetchOrder::call(7))
//!     .then_all([Step::new(ChargeCard::call(7)), Step::new(ReserveStock::call(7))])
//!     .then(Ship::call(7))
//!     .dispatch()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! `ship` runs after `charge_card` and `reserve_stock` have both succeeded, and reads their
//! results through its [`Context`] ([`Context::parent_result`]). Steps of one
//! type go in a stage as they are (`then_all([A::call(1), A::call(2)])`); steps of different
//! types as [`Step`]s, as above.
//!
//! **When a step dies** its policy ([`OnFailure`]) decides: halt the workflow there (the
//! default: the steps after it wait, and retrying it from the dead set resumes the workflow),
//! continue without it, or fail the workflow, which cancels the steps still waiting.
//!
//! **Crash safety.** The workflow's state lives under its home queue's hash tag (its first
//! step's queue); each step's end is recorded in the same script that settles the step, and
//! carried to the workflow idempotently by jid, so a parent's success is counted exactly once
//! however often a worker dies on the way (see `store::workflow`).

use crate::context::Context;
use crate::error::Result;
use crate::job::{Encoded, Job, PendingJob, encode};
use crate::status::JobStatus;
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// What happens to a workflow when one of its steps dies (exhausts its retries).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// The workflow stops at the dead step: the steps after it wait, and retrying it from the
    /// dead set (`gator-worker retry`) resumes the workflow.
    #[default]
    Halt,
    /// The steps after it go on as if it had succeeded, without its result.
    Continue,
    /// The workflow fails: every step still waiting is cancelled.
    Fail,
}

/// One step of a workflow: a job, and what its death does to the workflow.
#[derive(Debug)]
pub struct Step {
    pub(crate) job: Result<Encoded>,
    pub(crate) on_failure: OnFailure,
}

impl Step {
    /// A step that runs `job`, halting the workflow if it dies.
    pub fn new<J: Job>(job: PendingJob<J>) -> Step {
        Step {
            job: encode(job),
            on_failure: OnFailure::Halt,
        }
    }

    /// What the workflow does if this step dies.
    pub fn on_failure(mut self, policy: OnFailure) -> Step {
        self.on_failure = policy;
        self
    }
}

impl<J: Job> From<PendingJob<J>> for Step {
    fn from(job: PendingJob<J>) -> Step {
        Step::new(job)
    }
}

/// A workflow being built: stages of steps, each stage after every step of the one before.
/// Nothing is sent until it is dispatched. `C` is the client it goes through: `()`, the
/// process-wide default, until `.through(&client)` names one.
#[derive(Debug, Default)]
#[must_use = "a Workflow does nothing until it is dispatched"]
pub struct Workflow<C = ()> {
    pub(crate) stages: Vec<Vec<Step>>,
    client: C,
}

impl Workflow {
    /// An empty workflow.
    pub fn new() -> Workflow {
        Workflow::default()
    }
}

impl<C> Workflow<C> {
    /// This workflow going through `client` instead, and the client it had.
    pub(crate) fn swap_client<D>(self, client: D) -> (Workflow<D>, C) {
        let workflow = Workflow {
            stages: self.stages,
            client,
        };
        (workflow, self.client)
    }

    /// Appends a stage of one step: it runs after every step of the stage before has
    /// succeeded.
    pub fn then(mut self, step: impl Into<Step>) -> Self {
        self.stages.push(vec![step.into()]);
        self
    }

    /// Appends a stage of steps that run in parallel (fan-out); the next stage runs once all
    /// of them have succeeded (fan-in). An empty stage adds nothing.
    pub fn then_all<S: Into<Step>>(mut self, steps: impl IntoIterator<Item = S>) -> Self {
        let stage: Vec<Step> = steps.into_iter().map(Into::into).collect();
        if !stage.is_empty() {
            self.stages.push(stage);
        }
        self
    }

    /// How many steps the workflow has.
    pub fn len(&self) -> usize {
        self.stages.iter().map(Vec::len).sum()
    }

    /// Whether it has no step.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// The stages, each step encoded with its failure policy.
    pub(crate) fn into_stages(self) -> Result<Vec<Vec<(Encoded, OnFailure)>>> {
        self.stages
            .into_iter()
            .map(|stage| {
                stage
                    .into_iter()
                    .map(|step| Ok((step.job?, step.on_failure)))
                    .collect()
            })
            .collect()
    }
}

/// A step's record in its workflow, as stored (`s:<jid>`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StepRecord {
    pub(crate) job: String,
    pub(crate) queue: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) parents: Vec<String>,
    #[serde(default, skip_serializing_if = "is_halt")]
    pub(crate) policy: OnFailure,
}

fn is_halt(policy: &OnFailure) -> bool {
    *policy == OnFailure::Halt
}

/// Where a workflow is as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkflowState {
    /// Steps are still to run.
    Running,
    /// A step died with [`OnFailure::Halt`]: the steps after it wait until it is retried.
    Halted,
    /// Every step has ended.
    Done,
    /// A step died with [`OnFailure::Fail`]; the steps that were waiting are cancelled.
    Failed,
    /// Cancelled (`Client::cancel_workflow`): its steps that had not finished were cancelled.
    Cancelled,
}

/// Where one step of a workflow is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepState {
    /// Waiting for its parents to succeed.
    Waiting,
    /// Will not run: its workflow failed first.
    Cancelled,
    /// Released to its queue: its job's own status.
    Job(JobStatus),
}

/// One step of [`WorkflowStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepStatus {
    /// The step's job id.
    pub jid: String,
    /// Its job's wire name.
    pub job: String,
    /// Its queue (or shard).
    pub queue: String,
    /// The jids of the steps it runs after.
    pub parents: Vec<String>,
    /// What its death does to the workflow.
    pub on_failure: OnFailure,
    /// Where it is.
    pub state: StepState,
    /// What it returned (JSON), once it succeeded with a value.
    pub result: Option<String>,
}

/// What `Client::workflow_status` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowStatus {
    /// The workflow id.
    pub id: String,
    /// Where it is as a whole.
    pub state: WorkflowState,
    /// When it was dispatched (Redis time).
    pub created_at: SystemTime,
    /// Its steps, in the order they were added.
    pub steps: Vec<StepStatus>,
}

impl WorkflowStatus {
    /// The steps of job `job` (wire name), in order.
    pub fn steps_of<'a>(&'a self, job: &'a str) -> impl Iterator<Item = &'a StepStatus> + 'a {
        self.steps.iter().filter(move |step| step.job == job)
    }
}

pub use crate::payload::home_of;

/// A step's record as stored in its workflow.
pub(crate) fn record(
    job: &str,
    queue: &str,
    parents: Vec<String>,
    policy: OnFailure,
) -> Result<String> {
    Ok(serde_json::to_string(&StepRecord {
        job: job.to_owned(),
        queue: queue.to_owned(),
        parents,
        policy,
    })?)
}

pub use crate::context::Parent;

impl Context {
    /// The result of this step's parent of job `job` (wire name, e.g. `FetchOrder::NAME`),
    /// decoded as a `T`: `Ok(None)` if there is no such parent or it returned nothing, an
    /// error if the value is not a `T`. With several parents of that job, the first.
    ///
    /// Workflow steps only: a [`crate::chain::Chain`]'s steps do not pass results (a chain is
    /// the cheaper format that keeps none), and a job that is not a workflow step gets an
    /// error that says so (not a silent `None`), which sends it to the dead set unretried. A
    /// linear workflow, `Workflow::new().then(a).then(b)`, passes them.
    pub fn parent_result<T: serde::de::DeserializeOwned>(
        &self,
        job: &str,
    ) -> std::result::Result<Option<T>, crate::failure::JobError> {
        self.in_workflow()?;
        let Some(parent) = self.parents().iter().find(|p| p.job == job) else {
            return Ok(None);
        };
        decode_result(parent)
    }

    /// The results of every parent, decoded as `T`, in the order of the stage before this
    /// one; a parent that returned nothing is skipped. An error if a value is not a `T`.
    pub fn parent_results<T: serde::de::DeserializeOwned>(
        &self,
    ) -> std::result::Result<Vec<T>, crate::failure::JobError> {
        self.decode_parents(|_| true)
    }

    /// The results of every parent of job `job` (wire name), decoded as `T`, in order; a
    /// parent that returned nothing is skipped. An error if a value is not a `T`.
    pub fn parent_results_of<T: serde::de::DeserializeOwned>(
        &self,
        job: &str,
    ) -> std::result::Result<Vec<T>, crate::failure::JobError> {
        self.decode_parents(|parent| parent.job == job)
    }

    fn decode_parents<T: serde::de::DeserializeOwned>(
        &self,
        wanted: impl Fn(&Parent) -> bool,
    ) -> std::result::Result<Vec<T>, crate::failure::JobError> {
        self.in_workflow()?;
        let mut out = Vec::new();
        for parent in self.parents().iter().filter(|p| wanted(p)) {
            if let Some(value) = decode_result(parent)? {
                out.push(value);
            }
        }
        Ok(out)
    }
}

impl Context {
    /// An error unless this job is a workflow step: only those have parents' results.
    fn in_workflow(&self) -> std::result::Result<(), crate::failure::JobError> {
        if self.workflow_id().is_some() {
            return Ok(());
        }
        let what = match self.chain_id() {
            Some(chain) => format!("a step of chain {chain}, and chains pass no results"),
            None => "not a workflow step".to_owned(),
        };
        Err(crate::failure::JobError::discard(format!(
            "{} asked for its parents' results, but it is {what}: build the steps as a \
             workflow (Workflow::new().then(a).then(b)) to read them",
            self.job_name()
        )))
    }
}

fn decode_result<T: serde::de::DeserializeOwned>(
    parent: &Parent,
) -> std::result::Result<Option<T>, crate::failure::JobError> {
    let Some(json) = &parent.result else {
        return Ok(None);
    };
    serde_json::from_str(json).map(Some).map_err(|e| {
        crate::failure::JobError::new(format!(
            "the result of parent {} ({}) is not of the type asked for: {e}",
            parent.jid, parent.job
        ))
    })
}
