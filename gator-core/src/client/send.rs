//! The Redis engine ([`super::engine`]): a dispatch's one way through the client, build →
//! middleware → encode → place (`place.rs`) → store (here), and what it stores: a job now (on
//! its list, or parked on a controlled queue), later (in its queue's scheduled set), with a
//! unique lock, as a chain or as a workflow; each write one script or `MULTI`, then confirmed
//! on the replicas if the client waits for them.

use super::Client;
use super::engine::Due;
use super::place::{Later, Placed};
use crate::chain::Chain;
use crate::error::{Error, Result};
use crate::job::Encoded;
use crate::payload::{Payload, WorkflowLink, new_jid};
use crate::store::workflow::NewStep;
use crate::store::{self, schedule::When};
use crate::unique::Dispatched;
use crate::workflow::{Workflow, record};
use std::time::Duration;

impl Client {
    /// Stores one job, due `due`; whether it was new or a unique job's duplicate.
    pub(crate) async fn send(&self, job: Encoded, due: Due) -> Result<Dispatched> {
        let placed = self.place_one(job, due).await?;
        self.store(placed).await
    }

    /// Stores many jobs now, in one round trip where it can; their jids in order. Jobs with
    /// time windows that may not start now are scheduled at their next opening, and unique jobs
    /// go one by one with their locks (a duplicate's jid is the holder's).
    pub(crate) async fn send_many(&self, jobs: Vec<Encoded>) -> Result<Vec<String>> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let (payloads, later) = self.place_all(jobs).await?;
        let mut jids = Vec::with_capacity(payloads.len());
        let mut now = Vec::with_capacity(payloads.len());
        for (payload, later) in payloads.into_iter().zip(later) {
            if later.is_some() || payload.unique.is_some() {
                jids.push(self.store(Placed { payload, later }).await?.into_jid());
            } else {
                jids.push(payload.jid.clone());
                now.push(payload);
            }
        }
        if !now.is_empty() {
            self.enqueue(&now).await?;
        }
        Ok(jids)
    }

    /// Stores `chain`, its first step due `due`; its id.
    pub(crate) async fn send_chain(&self, chain: Chain, due: Due) -> Result<String> {
        let when = match due {
            Due::Now => When::In(Duration::ZERO),
            Due::At(ms) => When::At(ms),
            Due::In(delay) => When::In(delay),
        };
        self.store_chain(chain, when).await
    }

    /// Stores a placed job: a unique job with its lock ([`crate::unique`]), any other on its
    /// queue or in its scheduled set.
    pub(crate) async fn store(&self, placed: Placed) -> Result<Dispatched> {
        let Placed { payload, later } = placed;
        match later {
            Some(later) => self.schedule(payload, later).await,
            None if payload.unique.is_some() => self.store_unique(payload, None).await,
            None => {
                self.enqueue(std::slice::from_ref(&payload)).await?;
                Ok(Dispatched::New(payload.jid))
            }
        }
    }

    /// Stores `payload` in its queue's scheduled set (or on its queue if already due by
    /// Redis's clock), saying whether a unique job found a duplicate.
    async fn schedule(&self, mut payload: Payload, later: Later) -> Result<Dispatched> {
        // `enqueued_at` is when the job becomes due on its queue; the promotion script moves
        // the payload without rewriting it.
        payload.enqueued_at = later.due_ms.max(payload.enqueued_at);
        if payload.unique.is_some() {
            return self.store_unique(payload, Some(later.when)).await;
        }
        self.register_if_due(std::slice::from_ref(&payload)).await?;
        let mut conn = self.connection();
        store::schedule::schedule(&mut conn, self.keys(), &payload, later.when, None)
            .await
            .map_err(|e| e.of_queue(&payload.queue))?;
        self.confirm_replicated(&mut conn, vec![payload.queue.as_str()])
            .await?;
        Ok(Dispatched::New(payload.jid))
    }

    async fn store_chain(&self, chain: Chain, when: When) -> Result<String> {
        let steps = self.place(chain.into_steps()?).await?;
        let (id, mut steps) = crate::chain::link(steps)?;
        match when {
            When::At(due) => steps[0].enqueued_at = due.max(steps[0].enqueued_at),
            When::In(delay) => steps[0].enqueued_at += crate::store::lease::millis(delay),
        }
        self.register_controlled(&steps).await?;
        let mut conn = self.connection();
        store::chain::create(&mut conn, self.keys(), &steps, when).await?;
        self.confirm_replicated(&mut conn, vec![steps[0].queue.as_str()])
            .await?;
        Ok(id)
    }

    /// Stores a unique `payload` with its lock: now, or `when` (see [`store::unique::dispatch`]).
    async fn store_unique(&self, payload: Payload, when: Option<When>) -> Result<Dispatched> {
        self.register_if_due(std::slice::from_ref(&payload)).await?;
        let mut conn = self.connection();
        let (dispatched, _due) = store::unique::dispatch(&mut conn, self.keys(), &payload, when)
            .await
            .map_err(|e| e.of_queue(&payload.queue))?;
        // A debounced duplicate replaced the pending job: it wrote too.
        let debounced = payload
            .unique
            .as_ref()
            .is_some_and(|u| u.debounce.is_some());
        if !dispatched.is_duplicate() || debounced {
            self.confirm_replicated(&mut conn, vec![payload.queue.as_str()])
                .await?;
        }
        Ok(dispatched)
    }

    /// Pushes payloads to their queues, recording the queues in the known-queues set when this
    /// client has not done so in the last [`REGISTER_EVERY`].
    async fn enqueue(&self, payloads: &[Payload]) -> Result<()> {
        let register = self.due_for_registering(payloads.iter().map(|p| p.queue.as_str()));
        let mut conn = self.connection();
        store::queue::enqueue(&mut conn, self.keys(), payloads, register)
            .await
            .map_err(|e| match payloads.first() {
                Some(first) => e.of_queue(&first.queue),
                None => e,
            })?;
        if register {
            self.note_registered(payloads);
        }
        let queues = payloads.iter().map(|p| p.queue.as_str());
        self.confirm_replicated(&mut conn, queues).await
    }

    /// The Redis engine's [`Workflow::dispatch`]: stores the workflow, its first stage
    /// released; its id.
    pub(crate) async fn send_workflow(&self, workflow: Workflow) -> Result<String> {
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
            payload.workflow = Some(Box::new(WorkflowLink {
                id: id.clone(),
                parents: parents.clone(),
            }));
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
}
