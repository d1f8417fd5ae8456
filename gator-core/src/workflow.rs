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
//! results through its [`Context`](crate::Context) ([`Context::parent_result`]). Steps of one
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

use crate::client::{Client, default_client};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::job::{Encoded, Job, PendingJob, encode};
use crate::payload::{WorkflowLink, new_jid};
use crate::status::JobStatus;
use crate::store;
use crate::store::workflow::NewStep;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
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
    job: Result<Encoded>,
    on_failure: OnFailure,
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
/// Nothing is sent until it is dispatched.
#[derive(Debug, Default)]
#[must_use = "a Workflow does nothing until it is dispatched"]
pub struct Workflow {
    stages: Vec<Vec<Step>>,
}

impl Workflow {
    /// An empty workflow.
    pub fn new() -> Workflow {
        Workflow::default()
    }

    /// Appends a stage of one step: it runs after every step of the stage before has
    /// succeeded.
    pub fn then(mut self, step: impl Into<Step>) -> Workflow {
        self.stages.push(vec![step.into()]);
        self
    }

    /// Appends a stage of steps that run in parallel (fan-out); the next stage runs once all
    /// of them have succeeded (fan-in). An empty stage adds nothing.
    pub fn then_all<S: Into<Step>>(mut self, steps: impl IntoIterator<Item = S>) -> Workflow {
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

    /// Stores the workflow and starts its first stage through the default client; returns the
    /// workflow id (`<uuid>@<home queue>`).
    pub async fn dispatch(self) -> Result<String> {
        if let Some(mode) = crate::testing::active() {
            return crate::testing::dispatch_workflow(mode, self).await;
        }
        default_client().await?.dispatch_workflow(self).await
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

    /// [`Workflow::dispatch`] through `client`.
    pub async fn dispatch_with(self, client: &Client) -> Result<String> {
        client.dispatch_workflow(self).await
    }
}

/// A step's record in its workflow, as stored (`s:<jid>`).
#[derive(Debug, Serialize, Deserialize)]
struct StepRecord {
    job: String,
    queue: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    parents: Vec<String>,
    #[serde(default, skip_serializing_if = "is_halt")]
    policy: OnFailure,
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
    /// Cancelled ([`Client::cancel_workflow`]): its steps that had not finished were cancelled.
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

/// What [`Client::workflow_status`] found.
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

/// The home queue of workflow `id` (`<uuid>@<home>`): the part after the `@`.
pub fn home_of(id: &str) -> Option<&str> {
    id.split_once('@').map(|(_, home)| home)
}

impl Client {
    /// Stores `workflow` and starts its first stage; returns the workflow id.
    pub async fn dispatch_workflow(&self, workflow: Workflow) -> Result<String> {
        if let Some(mode) = crate::testing::active() {
            return crate::testing::dispatch_workflow(mode, workflow).await;
        }
        if workflow.is_empty() {
            return Err(Error::EmptyWorkflow);
        }
        let mut policies = Vec::new();
        let mut stage_of = Vec::new();
        let mut encoded = Vec::new();
        for (n, stage) in workflow.stages.into_iter().enumerate() {
            for step in stage {
                encoded.push(step.job?);
                policies.push(step.on_failure);
                stage_of.push(n);
            }
        }
        let placed = self.place(encoded).await?;
        let id = format!("{}@{}", new_jid(), placed[0].queue);
        let jids_of = |stage: usize| -> Vec<String> {
            placed
                .iter()
                .zip(&stage_of)
                .filter(|(_, s)| **s == stage)
                .map(|(p, _)| p.jid.clone())
                .collect()
        };
        let mut steps = Vec::with_capacity(placed.len());
        for ((payload, stage), policy) in placed.iter().zip(&stage_of).zip(&policies) {
            let parents = if *stage == 0 {
                Vec::new()
            } else {
                jids_of(stage - 1)
            };
            let mut payload = payload.clone();
            payload.workflow = Some(WorkflowLink {
                id: id.clone(),
                parents: parents.clone(),
            });
            steps.push(NewStep {
                record: record(&payload.job, &payload.queue, parents, *policy)?,
                children: jids_of(stage + 1),
                payload,
            });
        }
        let payloads: Vec<_> = steps.iter().map(|s| s.payload.clone()).collect();
        self.register_controlled(&payloads).await?;
        let mut conn = self.connection();
        store::workflow::create(&mut conn, self.keys(), &id, &steps, self.replica_wait()).await?;
        Ok(id)
    }

    /// Adds `step` to workflow `id`, to run once the steps `after` (jids of its steps) have
    /// succeeded, or at once if they have or `after` is empty. A workflow that is done runs
    /// again with it; a failed one refuses it. Returns the new step's jid.
    pub async fn add_to_workflow(
        &self,
        id: &str,
        step: impl Into<Step>,
        after: &[&str],
    ) -> Result<String> {
        store::workflow::split_id(id)?;
        let step = step.into();
        let mut payload = self.placed(step.job?).await?;
        let parents: Vec<String> = after.iter().map(|jid| (*jid).to_owned()).collect();
        payload.workflow = Some(WorkflowLink {
            id: id.to_owned(),
            parents: parents.clone(),
        });
        let new = NewStep {
            record: record(&payload.job, &payload.queue, parents, step.on_failure)?,
            children: Vec::new(),
            payload,
        };
        self.register_controlled(std::slice::from_ref(&new.payload))
            .await?;
        let mut conn = self.connection();
        store::workflow::add(&mut conn, self.keys(), id, &new, self.replica_wait()).await?;
        Ok(new.payload.jid)
    }

    /// Every step of workflow `id` with its state; `None` if the workflow is unknown (never
    /// dispatched, or finished longer ago than the worker's `--retention`). Two round trips:
    /// the workflow's hash, then the status records of its released steps in one pipeline.
    pub async fn workflow_status(&self, id: &str) -> Result<Option<WorkflowStatus>> {
        let mut conn = self.connection();
        let fields = store::workflow::read(&mut conn, self.keys(), id).await?;
        if fields.is_empty() {
            return Ok(None);
        }
        let mut steps: Vec<(String, StepRecord)> = fields
            .iter()
            .filter_map(|(field, value)| {
                let jid = field.strip_prefix("s:")?;
                Some((jid.to_owned(), serde_json::from_str(value).ok()?))
            })
            .collect();
        // Jids are UUIDv7, minted in the order the steps were added.
        steps.sort_by(|a, b| a.0.cmp(&b.0));
        let state_of = |jid: &str| fields.get(&format!("st:{jid}")).map(String::as_str);
        let released: Vec<(String, String)> = steps
            .iter()
            .filter(|(jid, _)| !matches!(state_of(jid), Some("waiting" | "cancelled")))
            .map(|(jid, step)| (step.queue.clone(), jid.clone()))
            .collect();
        let records = store::status::read_many(&mut conn, self.keys(), &released).await?;
        let mut records: HashMap<String, JobStatus> = released
            .into_iter()
            .zip(records)
            .map(|((_, jid), record)| {
                let status = record.map_or(JobStatus::Unknown, |r| r.status);
                (jid, status)
            })
            .collect();
        let halted = steps.iter().any(|(jid, step)| {
            matches!(state_of(jid), Some("dead" | "cancelled")) && step.policy == OnFailure::Halt
        });
        let state = match fields.get("state").map(String::as_str) {
            Some("done") => WorkflowState::Done,
            Some("failed") => WorkflowState::Failed,
            Some("cancelled") => WorkflowState::Cancelled,
            _ if halted => WorkflowState::Halted,
            _ => WorkflowState::Running,
        };
        let created_ms = fields
            .get("created")
            .and_then(|ms| ms.parse::<u64>().ok())
            .unwrap_or(0);
        Ok(Some(WorkflowStatus {
            id: id.to_owned(),
            state,
            created_at: SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(created_ms),
            steps: steps
                .into_iter()
                .map(|(jid, step)| StepStatus {
                    state: match state_of(&jid) {
                        Some("waiting") => StepState::Waiting,
                        Some("cancelled") => StepState::Cancelled,
                        _ => StepState::Job(records.remove(&jid).unwrap_or(JobStatus::Unknown)),
                    },
                    result: fields.get(&format!("r:{jid}")).cloned(),
                    jid,
                    job: step.job,
                    queue: step.queue,
                    parents: step.parents,
                    on_failure: step.policy,
                })
                .collect(),
        }))
    }
}

/// A step's record as stored in its workflow.
fn record(job: &str, queue: &str, parents: Vec<String>, policy: OnFailure) -> Result<String> {
    Ok(serde_json::to_string(&StepRecord {
        job: job.to_owned(),
        queue: queue.to_owned(),
        parents,
        policy,
    })?)
}

/// One parent of a workflow step, as its [`Context`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    /// The parent's jid.
    pub jid: String,
    /// Its job's wire name.
    pub job: String,
    /// What it returned (JSON); `None` if it returned nothing, or died and the workflow went
    /// on without it ([`OnFailure::Continue`]).
    pub result: Option<String>,
}

impl Context {
    /// The result of this step's parent of job `job` (wire name, e.g. `FetchOrder::NAME`),
    /// decoded as a `T`: `Ok(None)` if there is no such parent or it returned nothing, an
    /// error if the value is not a `T`. With several parents of that job, the first.
    pub fn parent_result<T: serde::de::DeserializeOwned>(
        &self,
        job: &str,
    ) -> std::result::Result<Option<T>, crate::JobError> {
        let Some(parent) = self.parents().iter().find(|p| p.job == job) else {
            return Ok(None);
        };
        decode_result(parent)
    }

    /// The results of every parent, decoded as `T`, in the order of the stage before this
    /// one; a parent that returned nothing is skipped. An error if a value is not a `T`.
    pub fn parent_results<T: serde::de::DeserializeOwned>(
        &self,
    ) -> std::result::Result<Vec<T>, crate::JobError> {
        self.decode_parents(|_| true)
    }

    /// The results of every parent of job `job` (wire name), decoded as `T`, in order; a
    /// parent that returned nothing is skipped. An error if a value is not a `T`.
    pub fn parent_results_of<T: serde::de::DeserializeOwned>(
        &self,
        job: &str,
    ) -> std::result::Result<Vec<T>, crate::JobError> {
        self.decode_parents(|parent| parent.job == job)
    }

    fn decode_parents<T: serde::de::DeserializeOwned>(
        &self,
        wanted: impl Fn(&Parent) -> bool,
    ) -> std::result::Result<Vec<T>, crate::JobError> {
        let mut out = Vec::new();
        for parent in self.parents().iter().filter(|p| wanted(p)) {
            if let Some(value) = decode_result(parent)? {
                out.push(value);
            }
        }
        Ok(out)
    }
}

fn decode_result<T: serde::de::DeserializeOwned>(
    parent: &Parent,
) -> std::result::Result<Option<T>, crate::JobError> {
    let Some(json) = &parent.result else {
        return Ok(None);
    };
    serde_json::from_str(json).map(Some).map_err(|e| {
        crate::JobError::new(format!(
            "the result of parent {} ({}) is not of the type asked for: {e}",
            parent.jid, parent.job
        ))
    })
}
