//! A workflow after its dispatch, through its client: adding a step, and reading its status.

use super::Client;
use crate::error::Result;
use crate::payload::WorkflowLink;
use crate::status::JobStatus;
use crate::store;
use crate::store::workflow::NewStep;
use crate::workflow::{
    OnFailure, Step, StepRecord, StepState, StepStatus, WorkflowState, WorkflowStatus, record,
};
use std::collections::HashMap;
use std::time::SystemTime;

impl Client {
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
        let mut placed = self.place(vec![step.job?]).await?;
        let mut payload = placed.pop().expect("one payload per job");
        let parents: Vec<String> = after.iter().map(|jid| (*jid).to_owned()).collect();
        payload.workflow = Some(Box::new(WorkflowLink {
            id: id.to_owned(),
            parents: parents.clone(),
        }));
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
        let steps = step_records(&fields);
        let state_of = |jid: &str| fields.get(&format!("st:{jid}")).map(String::as_str);
        let released: Vec<(String, String)> = steps
            .iter()
            .filter(|(jid, _)| !matches!(state_of(jid), Some("waiting" | "cancelled")))
            .map(|(jid, step)| (step.queue.clone(), jid.clone()))
            .collect();
        let records = store::status::read_many(&mut conn, self.keys(), &released).await?;
        // A step's result is reported to the workflow after its own record says done (the
        // report may cross slots, through the outbox), so the record's result stands in until
        // the report lands: a step never reads done without its result.
        let mut records: HashMap<String, (JobStatus, Option<String>)> = released
            .into_iter()
            .zip(records)
            .map(|((_, jid), record)| {
                let record = record.map_or((JobStatus::Unknown, None), |r| match r.status {
                    JobStatus::Done { .. } => (r.status, r.result),
                    status => (status, None),
                });
                (jid, record)
            })
            .collect();
        let created_ms = fields
            .get("created")
            .and_then(|ms| ms.parse::<u64>().ok())
            .unwrap_or(0);
        Ok(Some(WorkflowStatus {
            id: id.to_owned(),
            state: workflow_state(&fields, &steps),
            created_at: SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(created_ms),
            steps: steps
                .into_iter()
                .map(|(jid, step)| {
                    let (status, recorded) =
                        records.remove(&jid).unwrap_or((JobStatus::Unknown, None));
                    StepStatus {
                        state: match state_of(&jid) {
                            Some("waiting") => StepState::Waiting,
                            Some("cancelled") => StepState::Cancelled,
                            _ => StepState::Job(status),
                        },
                        result: fields.get(&format!("r:{jid}")).cloned().or(recorded),
                        jid,
                        job: step.job,
                        queue: step.queue,
                        parents: step.parents,
                        on_failure: step.policy,
                    }
                })
                .collect(),
        }))
    }
}

/// A workflow's step records, by jid, in the order the steps were added (jids are UUIDv7).
fn step_records(fields: &HashMap<String, String>) -> Vec<(String, StepRecord)> {
    let mut steps: Vec<(String, StepRecord)> = fields
        .iter()
        .filter_map(|(field, value)| {
            let jid = field.strip_prefix("s:")?;
            Some((jid.to_owned(), serde_json::from_str(value).ok()?))
        })
        .collect();
    steps.sort_by(|a, b| a.0.cmp(&b.0));
    steps
}

/// A workflow's state: as stored once it ended, else halted by a dead or cancelled step whose
/// policy halts it, else running.
fn workflow_state(
    fields: &HashMap<String, String>,
    steps: &[(String, StepRecord)],
) -> WorkflowState {
    let state_of = |jid: &str| fields.get(&format!("st:{jid}")).map(String::as_str);
    let halted = steps.iter().any(|(jid, step)| {
        matches!(state_of(jid), Some("dead" | "cancelled")) && step.policy == OnFailure::Halt
    });
    match fields.get("state").map(String::as_str) {
        Some("done") => WorkflowState::Done,
        Some("failed") => WorkflowState::Failed,
        Some("cancelled") => WorkflowState::Cancelled,
        _ if halted => WorkflowState::Halted,
        _ => WorkflowState::Running,
    }
}
