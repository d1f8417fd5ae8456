//! Cancelling a job, or a workflow's steps that have not finished (see `store::cancel` for how,
//! and what it costs).
//!
//! ```no_run
//! # async fn demo(client: gator_core::Client, jid: &str) -> gator_core::Result<()> {
//! use gator_core::cancel::Cancellation;
//! match client.cancel(jid).await? {
//!     Cancellation::Removed => println!("it will not run"),
//!     Cancellation::Stopping => println!("its worker stops it within a second"),
//!     Cancellation::Finished(status) => println!("too late: it is {}", status.name()),
//!     Cancellation::Unknown => println!("no such job"),
//! }
//! # Ok(()) }
//! ```
//!
//! A running job is told through its context: `ctx.cancelled()` resolves (and
//! `ctx.is_cancelled()` turns true) on whichever worker runs it, within a second. Whatever it
//! returns then, it is recorded cancelled and never retried.

use crate::status::JobStatus;

/// What `Client::cancel` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cancellation {
    /// It was waiting (queued, scheduled or retrying): it was removed, and is recorded
    /// cancelled. It will not run.
    Removed,
    /// It is running (or parked on a controlled queue): its worker stops it, within a second,
    /// and records it cancelled.
    Stopping,
    /// It had already finished: done, dead or cancelled (this status).
    Finished(JobStatus),
    /// No job has this jid (never dispatched, deleted, or finished longer ago than the
    /// retention).
    Unknown,
}

/// How often a cancel looks again when the job moved between its read and its removal.
pub(crate) const TRIES: usize = 20;
