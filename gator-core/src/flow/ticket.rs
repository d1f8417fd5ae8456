//! Tickets: a job's place on a queue under flow control, returned by
//! [`Client::dispatch_with_ticket`]. On an evenly spaced queue (a rate limit with burst 1) the
//! place gives the start time: the limiter's next start plus one interval per job ahead. As the
//! sharded interval queue asks, a dispatch can tell its caller when the job will run.

use crate::client::Client;
use crate::error::Result;
use crate::job::{Job, PendingJob, encode};
use crate::store;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where a dispatched job stands in its queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The job's id.
    pub jid: String,
    /// The queue's sequence number of the job: tickets of one queue are issued in dispatch
    /// order, and jobs of one priority and parking key start in ticket order, paused or not.
    /// `None` on a plain queue, or for a job scheduled for later (by its time windows).
    pub seq: Option<u64>,
    /// How many jobs of its parking key (its limit key and rate limiter) start before it.
    pub ahead: u64,
    /// When it is expected to start, on Redis's clock, if the queue is rate limited: exact on
    /// an evenly spaced queue whose jobs share one parking key and priority, while nothing
    /// pauses it; an estimate otherwise (a pause, a higher priority dispatched later, or a
    /// concurrency limit moves it).
    pub expected_start: Option<SystemTime>,
}

impl Client {
    /// Enqueues `job` now, like [`Client::dispatch`], and returns its [`Ticket`]: its place in
    /// its queue and, on a rate-limited queue, when it is expected to start. A job with time
    /// windows that may not start now is scheduled at its next opening, and its ticket has no
    /// place yet (`seq: None`), only that time. A unique job's ticket has no place either.
    pub async fn dispatch_with_ticket<J: Job>(&self, job: PendingJob<J>) -> Result<Ticket> {
        let payload = self.placed(encode(job)?).await?;
        if let Some(start) = self.window_start(&payload, None).await? {
            let jid = self.dispatch_at_ms(payload, start).await?;
            return Ok(Ticket {
                jid,
                seq: None,
                ahead: 0,
                expected_start: Some(UNIX_EPOCH + Duration::from_millis(start)),
            });
        }
        // A unique job is stored with its lock (`crate::unique`); its ticket has no place
        // (it may be a duplicate, already waiting somewhere).
        if payload.unique.is_some() {
            let jid = self.store_unique(payload, None).await?.into_jid();
            return Ok(Ticket {
                jid,
                seq: None,
                ahead: 0,
                expected_start: None,
            });
        }
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
