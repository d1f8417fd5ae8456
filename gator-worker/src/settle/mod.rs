//! Settling: the one place that writes a job's outcome. Each write takes the job out of this
//! process's in-flight list and records the outcome together, so a process that dies before it
//! leaves the job in flight, and recovery puts it back in its queue.
//!
//! [`Settler::settle`] picks the write:
//! 1. **success, and take the next job** ([`ack`], `batch`): a success that starts no chain
//!    step, holds no unique lock and came from a plain queue is written with plain commands,
//!    with every such success of its in-flight list that gathered meanwhile (a group commit),
//!    and, when this processor's next fetch draws the same queue, its next job is taken in the
//!    same `MULTI`: a worker draining a queue pays one round trip per batch; when it draws
//!    another, that queue's `LMOVE` goes out beside the write (`Fetcher::fetch_beside`);
//! 2. **admitted success** ([`ack`]): such a success from a queue under flow control goes to
//!    the queue's admission, whose next `admit.lua` call writes it (with the successes of the
//!    other processors), and which may hand the next job over at once;
//! 3. **every other outcome** ([`mod@write`]): success with a hand-off or a unique lock, retry,
//!    reschedule (put back for the next time window), wait for a reply, cancel, discard, kill:
//!    one script each, tried again while Redis blinks.
//!
//! And jobs taken ahead of a pause, which never ran, go back to the head of their queue
//! ([`write::put_back`]); a job with a deadline is judged at its start and, if it has come,
//! settled as expired in the same script (`Settler::judge`, in `start`); a unique job that
//! holds its lock until it starts releases it there (`Settler::release_unique`).
//!
//! Every write goes through the store's [`Settle`] handle, which only this room makes.

pub mod ack;
mod batch;
pub mod start;
pub mod write;

pub use write::{is_passing, put_back};

use crate::alarm::Alarm;
pub use crate::door::{Ack, Acked, DeadCap, Done, Fetched, Judged, Killed, MAX_ACKS, Verdict};
use crate::fetcher::{Fetcher, Job, Slot, Start};
use crate::leases::Leases;
use crate::outcome::Outcome;
use gator_core::Client;
use gator_core::store::Settle;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How long outcomes are kept: the dead set's cap, and how long a success's status record
/// (and result) is kept.
#[derive(Debug, Clone, Copy)]
pub struct Kept {
    /// How much of each dead set to keep.
    pub dead_cap: DeadCap,
    /// How long a success's status record and result are kept.
    pub retention: Duration,
}

/// What a processor does after a job is settled.
#[derive(Debug)]
pub enum Next {
    /// Run this job, taken with the last one's success.
    Job(Job),
    /// Fetch, starting where a draw for it left off, if one was made already.
    Fetch(Start),
}

impl Next {
    /// The job in hand, if any.
    fn into_job(self) -> Option<Job> {
        match self {
            Next::Job(job) => Some(job),
            Next::Fetch(_) => None,
        }
    }
}

/// A success whose call failed: the job, why, and the job fetched beside it, if any.
type Unwritten = (Fetched, Arc<gator_core::Error>, Option<Job>);

/// Writes the outcomes of one worker process's jobs; shared by its processors.
#[derive(Debug)]
pub struct Settler {
    client: Client,
    /// Hands over a next job taken with a success, and forgets each job settled.
    fetcher: Arc<Fetcher>,
    kept: Kept,
    /// Rung for every job this process writes due later (a retry, a reschedule).
    alarm: Arc<Alarm>,
    /// The successes waiting for the call on its way, per in-flight list.
    batches: batch::Batches,
}

impl Settler {
    /// The settler of the process whose jobs `fetcher` fetches.
    pub fn new(client: Client, fetcher: Arc<Fetcher>, kept: Kept) -> Settler {
        Settler {
            batches: batch::Batches::for_processors(fetcher.concurrency()),
            client,
            fetcher,
            kept,
            alarm: Arc::default(),
        }
    }

    /// The alarm this settler rings when it writes a job due later: the poller sleeps on it.
    pub fn alarm(&self) -> Arc<Alarm> {
        self.alarm.clone()
    }

    /// How long this process keeps outcomes.
    pub fn kept(&self) -> Kept {
        self.kept
    }

    /// Settles `job` with `outcome` (see the module docs); returns what its processor does
    /// next. Returns once the outcome is written, or once it is clear it never will be (the
    /// job then stays in flight, for recovery).
    pub async fn settle(&self, job: Job, outcome: Outcome, stop: &CancellationToken) -> Next {
        if let Outcome::Interrupted = outcome {
            // Nothing to write: it stays in flight, and shutdown puts it back at the head of
            // its queue as it is (`launcher::stop`). The slot goes back with `job`.
            self.fetcher.settled(&job.fetched);
            return Next::Fetch(Start::Draw);
        }
        let Some(done) = plain_success(&outcome, self.kept.retention) else {
            return self.write(job.fetched, &outcome, Some(job.slot)).await;
        };
        if job.fetched.admitted {
            // Boxed for the same reason: the admission's call is a large future.
            return Box::pin(self.ack_admitted(job, &done, stop)).await;
        }
        match self.ack_and_next(job, &done, stop).await {
            Ok(next) => next,
            // It may or may not have run: the usual write finds out. The slot is back already,
            // unless it holds a job fetched beside, which runs once the outcome is written.
            Err((fetched, e, beside)) => {
                if !self.fetcher.outage().failed(&e) {
                    warn!(queue = %fetched.queue, error = %e, "cannot record a job's outcome; trying again");
                }
                let next = self.write(fetched, &outcome, None).await;
                beside.map_or(next, Next::Job)
            }
        }
    }

    /// Writes `outcome` with its script ([`write::write`]); `slot` is given back once the
    /// first try is sent. The next fetch starts afresh.
    async fn write(&self, fetched: Fetched, outcome: &Outcome, slot: Option<Slot>) -> Next {
        let (outage, leases) = (self.fetcher.outage(), self.fetcher.leases());
        // Boxed: the scripts' writes make a future of kilobytes, which every success's settle
        // would otherwise carry, and copy, though it never writes by script.
        Box::pin(write::write(
            &self.client,
            &fetched,
            outcome,
            self.kept,
            slot,
            (outage, leases),
        ))
        .await;
        if let Outcome::Retry { delay, .. } | Outcome::Reschedule { delay } = outcome {
            self.alarm.ring_in(*delay);
        }
        if let Outcome::Suspend { wake, .. } = outcome {
            self.alarm.ring_in(wake_in(*wake));
        }
        self.fetcher.settled(&fetched);
        Next::Fetch(Start::Draw)
    }

    /// Writes the pending successes of jobs under flow control, for shutdown, before this
    /// process's in-flight jobs are put back (or those jobs would run again). Gives up at
    /// `deadline`.
    pub async fn flush_admitted(&self, deadline: tokio::time::Instant) {
        self.fetcher.admission().flush(deadline).await;
    }
}

/// What a success records, if it needs no script: no chain step or workflow step to hand on,
/// and no unique lock to release (a unique job's success releases its lock in its script).
fn plain_success(outcome: &Outcome, retention: Duration) -> Option<Done<'_>> {
    match outcome {
        Outcome::Done {
            handoff: None,
            unique_lock: false,
            ..
        } => outcome.done(retention),
        _ => None,
    }
}

/// Logs `jobs` outcomes of `queue` that found their job no longer in flight, so not written.
/// If this process's lease on the queue ran out lately (it was paused or cut off from Redis
/// past it), recovery put the jobs back and they run again: the outcomes kept here until
/// Redis answered are dropped, and the log says so. Otherwise an earlier write whose reply was
/// lost recorded them.
pub(crate) fn not_in_flight(leases: &Leases, queue: &str, jobs: usize) {
    if leases.ran_out_lately(queue) {
        warn!(queue = %queue, jobs, "outcomes dropped: this process's lease on the queue ran out while they waited for redis, so recovery put their jobs back and they run again");
    } else {
        warn!(queue = %queue, jobs, "job was no longer in flight: an earlier write whose reply was lost recorded its outcome, or it was recovered and will run again");
    }
}

/// A [`Settle`] handle on `client`'s shared connection: every outcome write goes through one,
/// and only this room makes them.
fn handle(client: &Client) -> Settle<'_> {
    Settle::new(client.connection(), client.keys(), client.replica_wait())
}

/// How long until a suspended job wakes, on this host's clock: only how long the poller
/// sleeps (Redis's clock decides what is due).
fn wake_in(wake: gator_core::context::durable::Wake) -> Duration {
    match wake {
        gator_core::context::durable::Wake::In(delay) => delay,
        gator_core::context::durable::Wake::At(at) => at
            .duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    }
}
