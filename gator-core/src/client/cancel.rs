//! Cancelling a job, or a workflow's steps that have not finished ([`crate::cancel`]).

use super::Client;
use crate::cancel::{Cancellation, TRIES};
use crate::error::Result;
use crate::status::JobStatus;
use crate::store;
use crate::store::cancel::Waiting;
use crate::store::sets::SetKind;
use crate::store::status::DEFAULT_RETENTION;

impl Client {
    /// Cancels job `jid`: removes it if it is waiting (queued, scheduled, retrying), or has its
    /// worker stop it if it is running. A cancelled job is recorded `cancelled` (kept 24 h) and
    /// never retried. A queued job is found by reading its queue's list page by page, so the
    /// cost grows with the queue's length (about a millisecond per 10,000 jobs queued before
    /// it); a scheduled or retrying one from its record's due time (`locate.lua`: a few reads
    /// whatever the set holds).
    pub async fn cancel(&self, jid: &str) -> Result<Cancellation> {
        for _ in 0..TRIES {
            if let Some(done) = self.try_cancel(jid).await? {
                return Ok(done);
            }
            // It moved between the read and the removal (fetched, promoted, retried, its reply
            // came): look again.
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        Err(crate::error::Error::CancelRaced {
            jid: jid.to_owned(),
        })
    }

    /// One try at cancelling `jid` in the state its record says; `None` if it moved meanwhile.
    async fn try_cancel(&self, jid: &str) -> Result<Option<Cancellation>> {
        let Some(details) = self.job_details(jid).await? else {
            return Ok(Some(Cancellation::Unknown));
        };
        let queue = details.queue.as_str();
        let removed = match details.status {
            status if status.is_final() => return Ok(Some(Cancellation::Finished(status))),
            JobStatus::Running { .. } => {
                return Ok(self
                    .mark(queue, jid, "running")
                    .await?
                    .then_some(Cancellation::Stopping));
            }
            JobStatus::Queued if self.is_controlled(queue).await? => {
                // Parked: only a worker's admission takes it out; it is settled there.
                return Ok(self
                    .mark(queue, jid, "queued")
                    .await?
                    .then_some(Cancellation::Removed));
            }
            JobStatus::Queued => return self.cancel_queued(queue, jid).await,
            status @ JobStatus::Scheduled { .. } => {
                self.remove_from_set(queue, jid, &status, Waiting::Scheduled)
                    .await?
            }
            status @ JobStatus::Retrying { .. } => {
                self.remove_from_set(queue, jid, &status, Waiting::Retrying)
                    .await?
            }
            JobStatus::AwaitingReply { key, .. } => {
                return self.cancel_awaiting(queue, jid, (&key, "awaiting")).await;
            }
            // A durable job waiting for a reply as a step.
            JobStatus::Suspended { reason, .. } if reason.starts_with("reply ") => {
                let key = &reason["reply ".len()..];
                return self.cancel_awaiting(queue, jid, (key, "suspended")).await;
            }
            // A durable job asleep, or between its slices: in the scheduled set.
            status @ JobStatus::Suspended { .. } => {
                self.remove_from_set(queue, jid, &status, Waiting::Scheduled)
                    .await?
            }
            _ => return Ok(Some(Cancellation::Unknown)),
        };
        Ok(removed.then_some(Cancellation::Removed))
    }

    /// Marks `jid` to be cancelled by the worker that holds it, if its record still says
    /// `state`.
    async fn mark(&self, queue: &str, jid: &str, state: &str) -> Result<bool> {
        let mut conn = self.connection();
        store::cancel::mark(&mut conn, self.keys(), queue, jid, state, DEFAULT_RETENTION).await
    }

    /// Cancels a job queued on plain `queue`: removed from its list, or, fetched already and
    /// not yet marked running, marked for its worker to settle.
    async fn cancel_queued(&self, queue: &str, jid: &str) -> Result<Option<Cancellation>> {
        let mut conn = self.connection();
        let found = store::cancel::find_queued(&mut conn, self.keys(), queue, jid).await?;
        // Fetched already, not yet marked running (a job's record says so after 100 ms): its
        // worker settles it, at its start or while it runs.
        if found.is_none() && self.mark(queue, jid, "queued").await? {
            return Ok(Some(Cancellation::Stopping));
        }
        let found = found.map(|payload| store::cancel::Found {
            payload,
            listed_due: None,
        });
        let removed = self.remove(queue, jid, Waiting::Queued, found).await?;
        Ok(removed.then_some(Cancellation::Removed))
    }

    /// Removes `jid` from the set of `queue` its record (`status`) says it waits in, if it is
    /// still there with the due time the record gave.
    async fn remove_from_set(
        &self,
        queue: &str,
        jid: &str,
        status: &JobStatus,
        at: Waiting,
    ) -> Result<bool> {
        let kind = match at {
            Waiting::Retrying => SetKind::Retry,
            Waiting::Scheduled | Waiting::Queued => SetKind::Scheduled,
        };
        let Some(due) = store::locate::score_in(kind, status) else {
            return Ok(false);
        };
        let mut conn = self.connection();
        let found =
            store::cancel::find_in_set(&mut conn, self.keys(), kind, queue, jid, due).await?;
        self.remove(queue, jid, at, found).await
    }

    /// Ends the wait of a job waiting for the reply to `key`, and records it cancelled (a
    /// workflow step's end handed to its workflow).
    async fn cancel_awaiting(
        &self,
        queue: &str,
        jid: &str,
        (key, state): (&str, &str),
    ) -> Result<Option<Cancellation>> {
        let (keys, mut conn) = (self.keys(), self.connection());
        let Some(waiter) = store::reply::end_wait(&mut conn, keys, key, jid).await? else {
            return Ok(None); // its reply came, or it timed out, meanwhile
        };
        let report = store::handoff::on_end(&waiter.payload, "cancelled", DEFAULT_RETENTION)
            .unwrap_or_default();
        store::cancel::mark_with(
            &mut conn,
            keys,
            queue,
            jid,
            state,
            DEFAULT_RETENTION,
            &report,
        )
        .await?;
        if !report.is_empty() {
            let wait = self.replica_wait();
            store::handoff::drain_outbox(&mut conn, keys, queue, wait).await?;
        }
        Ok(Some(Cancellation::Removed))
    }

    async fn remove(
        &self,
        queue: &str,
        jid: &str,
        at: Waiting,
        found: Option<store::cancel::Found>,
    ) -> Result<bool> {
        let Some(found) = found else {
            return Ok(false);
        };
        let mut conn = self.connection();
        store::cancel::remove(
            &mut conn,
            self.keys(),
            queue,
            jid,
            at,
            &found,
            DEFAULT_RETENTION,
        )
        .await
    }

    async fn is_controlled(&self, queue: &str) -> Result<bool> {
        store::flow::is_controlled(&mut self.connection(), self.keys(), queue).await
    }

    /// Cancels workflow `id`: its steps still waiting and those waiting in their queues are
    /// cancelled, its running steps are stopped ([`Client::cancel`] on each), and it is
    /// recorded `Cancelled`. Returns how many steps it cancelled; 0 if it had already ended.
    pub async fn cancel_workflow(&self, id: &str) -> Result<usize> {
        let before = self.workflow_status(id).await?;
        let Some(before) = before else {
            return Err(crate::error::Error::UnknownWorkflow { id: id.to_owned() });
        };
        let waiting = before
            .steps
            .iter()
            .filter(|s| s.state == crate::workflow::StepState::Waiting)
            .count();
        let released =
            store::workflow::cancel(&mut self.connection(), self.keys(), id, DEFAULT_RETENTION)
                .await?;
        if before.state != crate::workflow::WorkflowState::Running
            && before.state != crate::workflow::WorkflowState::Halted
        {
            return Ok(0);
        }
        let mut cancelled = waiting;
        for (jid, _queue) in released {
            if matches!(
                self.cancel(&jid).await?,
                Cancellation::Removed | Cancellation::Stopping
            ) {
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }
}
