//! Dispatching a job with its [`Ticket`]: its place in its queue, and on a rate-limited queue
//! when it is expected to start.

use super::Client;
use super::engine::Due;
use crate::error::Result;
use crate::flow::Ticket;
use crate::job::{Job, PendingJob, encode};
use crate::store;
use std::time::{Duration, UNIX_EPOCH};

impl Client {
    /// Enqueues `job` now, like [`PendingJob::dispatch`], and returns its [`Ticket`]: its place in
    /// its queue and, on a rate-limited queue, when it is expected to start. A job with time
    /// windows that may not start now is scheduled at its next opening, and its ticket has no
    /// place yet (`seq: None`), only that time. A unique job's ticket has no place either.
    pub async fn dispatch_with_ticket<J: Job>(&self, job: PendingJob<J>) -> Result<Ticket> {
        let placed = self.place_one(encode(job)?, Due::Now).await?;
        let no_place = |jid, expected_start| Ticket {
            jid,
            seq: None,
            ahead: 0,
            expected_start,
        };
        if let Some(later) = placed.later {
            let start = UNIX_EPOCH + Duration::from_millis(later.due_ms);
            return Ok(no_place(self.store(placed).await?.into_jid(), Some(start)));
        }
        // A unique job is stored with its lock (`crate::unique`); its ticket has no place
        // (it may be a duplicate, already waiting somewhere).
        if placed.payload.unique.is_some() {
            return Ok(no_place(self.store(placed).await?.into_jid(), None));
        }
        let payload = placed.payload;
        let register = self.due_for_registering(std::iter::once(payload.queue.as_str()));
        let mut conn = self.connection();
        let stored =
            store::queue::enqueue_with_ticket(&mut conn, self.keys(), &payload, register).await?;
        if register {
            self.note_registered(std::slice::from_ref(&payload));
        }
        self.confirm_replicated(&mut conn, vec![payload.queue.as_str()])
            .await?;
        Ok(Ticket {
            jid: payload.jid,
            seq: stored.map(|t| t.seq),
            ahead: stored.map_or(0, |t| t.ahead),
            expected_start: stored
                .and_then(|t| t.expected_start_ms)
                .map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
        })
    }
}
