//! Looking a job up by its jid: its status, the value it returned, and waiting for it to finish.
//! The status records are written with every change of a job's state (see
//! `crate::store::status` for the records and their cost).

pub use crate::store::progress::Progress;
pub use crate::store::status::JobStatus;
use std::time::SystemTime;

/// What `Client::job_details` found about a job.
#[derive(Debug, Clone, PartialEq)]
pub struct JobDetails {
    /// The queue (or shard) whose record it is.
    pub queue: String,
    /// Its status.
    pub status: JobStatus,
    /// What it returned, as JSON, if it is done and returned a value.
    pub result: Option<String>,
    /// The last progress it reported (`Context::progress`), kept after it ends.
    pub progress: Option<Progress>,
}

/// Where a job stands, as `Client::position` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Position {
    /// Waiting in a plain queue's list.
    Queued {
        /// The list it waits in (a queue, or a shard of one).
        queue: String,
        /// The jobs before it: 0 when it is fetched next. Its position is `ahead + 1`.
        ahead: u64,
        /// The jobs in the list.
        length: u64,
        /// Whether it was found at that place; `false` when it stands out of jid order and
        /// was not found near where its jid sorts: `ahead` is then an estimate.
        exact: bool,
        /// When it should start, from the queue's recent throughput.
        expected_start: ExpectedStart,
    },
    /// Parked in a controlled queue (flow control): it starts when admission picks it, by
    /// priority, limits and rates, from among its parking key's jobs.
    Parked {
        /// Its queue.
        queue: String,
        /// Its place among the jobs parked with it; `None` if it was not where its status
        /// record says (admitted a moment ago, or parked by a version that did not record
        /// its place).
        place: Option<ParkedPlace>,
    },
    /// In the scheduled set (or waiting to retry) until `at`: it joins its queue then.
    Scheduled {
        /// When it is due (Redis time).
        at: SystemTime,
    },
    /// Not waiting: running, finished, or unknown (its status says which).
    NotWaiting {
        /// Its status.
        status: JobStatus,
    },
}

/// Where a parked job stands among the jobs of its parking key (its limit key, rate limiter
/// and no-overlap key), or of the critical set, which goes before every key.
#[derive(Debug, Clone, PartialEq)]
pub struct ParkedPlace {
    /// Its parking key (`""` for none; a limit key, then `\u{1f}` and its rate limiter's
    /// name, then `\u{1e}` and its no-overlap key, if it names them), or `None` for a critical
    /// job.
    pub key: Option<String>,
    /// The jobs of its key parked before it: 0 when it is its key's next job. Jobs of other
    /// keys may start before it too, by their priority, share and rates.
    pub ahead: u64,
    /// The jobs of its key parked.
    pub length: u64,
    /// The queue's parking keys whose next job may start now.
    pub ready_keys: u64,
    /// The queue's parking keys holding parked jobs (ready, or waiting for their share of a
    /// limit or for a rate limiter).
    pub waiting_keys: u64,
    /// When it should start: its key's share of the queue's recent throughput, or why
    /// that cannot be said.
    pub expected_start: ExpectedStart,
}

/// When a queued job should start: its jobs ahead over the queue's recent throughput.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedStart {
    /// Expected at `at` (Redis time), at `per_minute` jobs a minute.
    At {
        /// When.
        at: SystemTime,
        /// The throughput it is computed from: the queue's processed jobs a minute over the
        /// last 5 minutes.
        per_minute: f64,
    },
    /// No estimate, and why.
    Unknown {
        /// Why (no job of the queue was processed in the last 5 minutes; for a parked job,
        /// its queue is paused or runs in time windows).
        reason: &'static str,
    },
}
