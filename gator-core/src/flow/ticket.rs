//! Tickets: a job's place on a queue under flow control, returned by
//! [`Client::dispatch_with_ticket`]. On an evenly spaced queue (a rate limit with burst 1) the
//! place gives the start time: the limiter's next start plus one interval per job ahead. As the
//! sharded interval queue asks, a dispatch can tell its caller when the job will run.

use std::time::SystemTime;

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
