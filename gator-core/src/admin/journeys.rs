//! The chains and workflows in flight, from their per-queue indexes
//! (`crate::store::journeys`).

use super::Admin;
use crate::error::Result;
use crate::store::journeys::{self, JourneyKind};
use crate::workflow::{StepState, StepStatus, WorkflowState};
use serde::Serialize;

/// A chain or a workflow that has not finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JourneyInFlight {
    /// `chain` or `workflow`.
    pub kind: &'static str,
    /// Its id: a chain's id, or a workflow's `<uuid>@<home queue>`.
    pub id: String,
    /// The queue whose hash tag holds it (a chain's first queue, a workflow's home).
    pub queue: String,
    /// When it was dispatched (ms, the dispatching client's clock).
    pub created_at_ms: u64,
    /// A workflow's steps; `None` for a chain (its finished steps are not kept).
    pub steps: Option<usize>,
    /// A workflow's steps that succeeded.
    pub done: Option<usize>,
    /// A workflow's steps that died or were cancelled.
    pub failed: Option<usize>,
    /// Steps not released yet: a chain's waiting steps, a workflow's steps waiting for their
    /// parents.
    pub waiting: usize,
}

impl Admin {
    /// Up to `limit` chains and up to `limit` workflows in flight per known queue, newest
    /// first. Ids of those that finished are pruned from the indexes as they are met.
    pub async fn journeys_in_flight(&self, limit: usize) -> Result<Vec<JourneyInFlight>> {
        let mut journeys = Vec::new();
        for queue in self.known_queues().await? {
            journeys.extend(self.chains_in_flight(&queue, limit).await?);
            journeys.extend(self.workflows_in_flight(&queue, limit).await?);
        }
        journeys.sort_by_key(|f| std::cmp::Reverse(f.created_at_ms));
        Ok(journeys)
    }

    /// `queue`'s newest chains in flight: those whose list of waiting steps exists.
    async fn chains_in_flight(&self, queue: &str, limit: usize) -> Result<Vec<JourneyInFlight>> {
        let (keys, mut conn) = (self.keys(), self.connection());
        let chains = journeys::newest(&mut conn, keys, JourneyKind::Chain, queue, limit).await?;
        let ids: Vec<&str> = chains.iter().map(|(id, _)| id.as_str()).collect();
        let lens = if ids.is_empty() {
            Vec::new()
        } else {
            journeys::chain_lengths(&mut conn, keys, queue, &ids).await?
        };
        let (mut found, mut gone) = (Vec::new(), Vec::new());
        for ((id, at), waiting) in chains.into_iter().zip(lens) {
            if waiting == 0 {
                gone.push(id);
                continue;
            }
            found.push(JourneyInFlight {
                kind: "chain",
                id,
                queue: queue.to_owned(),
                created_at_ms: at,
                steps: None,
                done: None,
                failed: None,
                waiting,
            });
        }
        journeys::prune(&mut conn, keys, JourneyKind::Chain, queue, &gone).await?;
        Ok(found)
    }

    /// `queue`'s newest workflows in flight: those whose state is `running`.
    async fn workflows_in_flight(&self, queue: &str, limit: usize) -> Result<Vec<JourneyInFlight>> {
        let (keys, mut conn) = (self.keys(), self.connection());
        let workflows =
            journeys::newest(&mut conn, keys, JourneyKind::Workflow, queue, limit).await?;
        let (mut found, mut gone) = (Vec::new(), Vec::new());
        for (uuid, at) in workflows {
            let id = format!("{uuid}@{queue}");
            match self.client.workflow_status(&id).await? {
                Some(status) if status.state == WorkflowState::Running => {
                    found.push(in_flight(id, queue, at, &status.steps));
                }
                _ => gone.push(uuid),
            }
        }
        journeys::prune(&mut conn, keys, JourneyKind::Workflow, queue, &gone).await?;
        Ok(found)
    }
}

/// A running workflow's row: its steps counted by how far they got.
fn in_flight(id: String, queue: &str, at: u64, steps: &[StepStatus]) -> JourneyInFlight {
    use crate::status::JobStatus as S;
    let count = |f: fn(&StepState) -> bool| steps.iter().filter(|s| f(&s.state)).count();
    JourneyInFlight {
        kind: "workflow",
        id,
        queue: queue.to_owned(),
        created_at_ms: at,
        steps: Some(steps.len()),
        done: Some(count(|s| matches!(s, StepState::Job(S::Done { .. })))),
        failed: Some(count(|s| {
            matches!(
                s,
                StepState::Cancelled
                    | StepState::Job(S::Dead { .. } | S::Cancelled { .. } | S::Discarded { .. })
            )
        })),
        waiting: count(|s| matches!(s, StepState::Waiting)),
    }
}
