//! Chains and workflows in testing mode: in fake mode their first steps are recorded, and each
//! next step when the ones before it ended as the real thing would release it; in inline mode
//! they run step by step at their dispatch.

use super::record::Recorded;
use super::run::{StepOf, run_to_end};
use super::{Dispatched, Mode, lock};
use crate::chain::Chain;
use crate::clock::to_ms;
use crate::error::{Error, Result};
use crate::payload::new_jid;
use crate::registry::Registry;
use crate::workflow::{OnFailure, Parent, Workflow};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// What a recorded step belongs to, and what comes after it.
pub(crate) enum Link {
    /// A step of chain `id`; `rest` run one by one after it, each once the one before
    /// succeeded.
    Chain {
        id: String,
        rest: VecDeque<Recorded>,
    },
    /// A step of a workflow, with its parents' results and its failure policy.
    Workflow {
        flow: Arc<Mutex<FakeWorkflow>>,
        parents: Vec<Parent>,
        policy: OnFailure,
    },
}

impl Link {
    /// What the step's context says of its chain (the id) or workflow (the id and the step's
    /// parents).
    pub(super) fn step_of(&self) -> StepOf {
        match self {
            Link::Chain { id, .. } => StepOf {
                chain_id: Some(id.clone()),
                workflow: None,
            },
            Link::Workflow { flow, parents, .. } => StepOf {
                chain_id: None,
                workflow: Some((lock(flow).id.clone(), parents.clone())),
            },
        }
    }
}

/// One stage of a workflow: its steps, each with its failure policy.
type Stage = Vec<(Recorded, OnFailure)>;

/// A workflow being drained: the stages still to come, and the one running.
pub(crate) struct FakeWorkflow {
    id: String,
    waiting: VecDeque<Stage>,
    /// Steps of the running stage that have not ended.
    open: usize,
    /// What the running stage's ended steps leave to the next: their results.
    results: Vec<Parent>,
    /// A step halted or failed the workflow: nothing more is released.
    stopped: bool,
}

impl FakeWorkflow {
    /// Records the end of a step of the running stage; the next stage's steps, with their
    /// parents, once every step of this one has ended.
    fn ended(
        &mut self,
        job: &Dispatched,
        outcome: &std::result::Result<Option<String>, String>,
        policy: OnFailure,
    ) -> Option<(Stage, Vec<Parent>)> {
        self.open = self.open.saturating_sub(1);
        let parent = |result| Parent {
            jid: job.jid.clone(),
            job: job.job.clone(),
            result,
        };
        match (outcome, policy) {
            (Ok(result), _) => self.results.push(parent(result.clone())),
            (Err(_), OnFailure::Continue) => self.results.push(parent(None)),
            (Err(_), OnFailure::Halt) => self.stopped = true,
            (Err(_), OnFailure::Fail) => {
                self.stopped = true;
                self.waiting.clear();
            }
        }
        if self.open > 0 || self.stopped {
            return None;
        }
        let stage = self.waiting.pop_front()?;
        self.open = stage.len();
        Some((stage, std::mem::take(&mut self.results)))
    }
}

/// The steps to record after `job` (a step `link` says) ended with `outcome` (a failure: once
/// it has no retries left), with theirs.
pub(super) fn after(
    link: Link,
    job: &Dispatched,
    outcome: &std::result::Result<Option<String>, String>,
) -> Vec<(Recorded, Link)> {
    match link {
        // A failed step halts its chain, as a dead step does.
        Link::Chain { .. } if outcome.is_err() => Vec::new(),
        Link::Chain { id, mut rest } => match rest.pop_front() {
            Some(next) => vec![(next, Link::Chain { id, rest })],
            None => Vec::new(),
        },
        Link::Workflow { flow, policy, .. } => {
            let released = lock(&flow).ended(job, outcome, policy);
            let Some((stage, parents)) = released else {
                return Vec::new();
            };
            stage
                .into_iter()
                .map(|(step, policy)| {
                    let link = Link::Workflow {
                        flow: flow.clone(),
                        parents: parents.clone(),
                        policy,
                    };
                    (step, link)
                })
                .collect()
        }
    }
}

/// A chain dispatched in testing `mode` (its first step due at `due`); returns its id.
pub(crate) async fn dispatch_chain(
    mode: Arc<Mode>,
    chain: Chain,
    due: Option<SystemTime>,
) -> Result<String> {
    let id = new_jid();
    let now = to_ms(mode.now());
    let mut steps: VecDeque<Recorded> = chain
        .into_steps()?
        .into_iter()
        .map(|step| Recorded::of(&step.payload, None, now).expiring(step.expiry, now))
        .collect();
    if mode.inline {
        let registry = Registry::from_inventory()?;
        while let Some(step) = steps.pop_front() {
            let chain = StepOf {
                chain_id: Some(id.clone()),
                workflow: None,
            };
            Box::pin(run_to_end(&registry, &mode, &step, chain))
                .await
                .map_err(|failure| Error::InlineJobFailed {
                    job: step.job.job.clone(),
                    reason: failure.to_string(),
                })?;
        }
        return Ok(id);
    }
    if let Some(mut first) = steps.pop_front() {
        first.job.due = due;
        let link = Link::Chain {
            id: id.clone(),
            rest: steps,
        };
        lock(&mode.links).insert(first.job.jid.clone(), link);
        mode.record(first);
    }
    Ok(id)
}

/// A workflow dispatched in testing `mode`; returns its id (`<uuid>@<home queue>`).
pub(crate) async fn dispatch_workflow(mode: Arc<Mode>, workflow: Workflow) -> Result<String> {
    let now = to_ms(mode.now());
    let mut stages: VecDeque<Stage> = workflow
        .into_stages()?
        .into_iter()
        .map(|stage| {
            stage
                .into_iter()
                .map(|(step, policy)| {
                    let recorded = Recorded::of(&step.payload, None, now);
                    (recorded.expiring(step.expiry, now), policy)
                })
                .collect()
        })
        .collect();
    let home = match stages.front().and_then(|stage| stage.first()) {
        Some((first, _)) => first.job.queue.clone(),
        None => return Err(Error::EmptyWorkflow),
    };
    let id = format!("{}@{home}", new_jid());
    let first = stages.pop_front().unwrap_or_default();
    let flow = Arc::new(Mutex::new(FakeWorkflow {
        id: id.clone(),
        waiting: stages,
        open: first.len(),
        results: Vec::new(),
        stopped: false,
    }));
    if mode.inline {
        run_inline(&mode, &flow, first).await?;
        return Ok(id);
    }
    for (step, policy) in first {
        let link = Link::Workflow {
            flow: flow.clone(),
            parents: Vec::new(),
            policy,
        };
        lock(&mode.links).insert(step.job.jid.clone(), link);
        mode.record(step);
    }
    Ok(id)
}

/// Runs a workflow inline, stage by stage; a failed step that halts or fails it fails the
/// dispatch.
async fn run_inline(mode: &Arc<Mode>, flow: &Arc<Mutex<FakeWorkflow>>, first: Stage) -> Result<()> {
    let registry = Registry::from_inventory()?;
    let mut stage = first;
    let mut parents = Vec::new();
    while !stage.is_empty() {
        let mut next = None;
        for (step, policy) in stage {
            let link = Link::Workflow {
                flow: flow.clone(),
                parents: parents.clone(),
                policy,
            };
            let outcome = Box::pin(run_to_end(&registry, mode, &step, link.step_of()))
                .await
                .map_err(|failure| failure.to_string());
            if let Err(reason) = &outcome
                && policy != OnFailure::Continue
            {
                return Err(Error::InlineJobFailed {
                    job: step.job.job.clone(),
                    reason: reason.clone(),
                });
            }
            if let Some(released) = lock(flow).ended(&step.job, &outcome, policy) {
                next = Some(released);
            }
        }
        (stage, parents) = next.unwrap_or_default();
    }
    Ok(())
}
