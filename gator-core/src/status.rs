//! Looking a job up by its jid: its status, the value it returned, and waiting for it to finish.
//! The status records are written with every change of a job's state (see
//! [`crate::store::status`] for the records and their cost).

pub use crate::store::status::JobStatus;

/// What `Client::job_details` found about a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDetails {
    /// The queue (or shard) whose record it is.
    pub queue: String,
    /// Its status.
    pub status: JobStatus,
    /// What it returned, as JSON, if it is done and returned a value.
    pub result: Option<String>,
}
