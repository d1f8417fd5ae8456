//! The job catalogue: what the running workers can run, published in Redis so that every
//! producer that is not typed Rust code (the HTTP API, [`crate::Client::dispatch_by_name`],
//! the dashboard, the command line, a Python script following `docs/wire-format.md`) sends a
//! job exactly as `SendEmail::dispatch` would: to its queue, with its flow and unique options.
//!
//! - **What is published.** For each job a worker registers, its [`Definition`]: the wire name,
//!   the default queue, the parameters (name and type, as the job fn writes them), the
//!   dispatch-side options (priority, cost, critical, the limit key's argument, rate limiter,
//!   windows, no-overlap, unique and debounce), and the worker-side ones for reading (retries,
//!   backoff, timeout).
//! - **Who writes.** One writer per job name at a time: the worker holding the name's writer
//!   lease (renewed every 20 s, ending 60 s after its last renewal, on Redis time). A worker
//!   whose definition differs from the published one logs it and waits for the lease; the
//!   catalogue never flips between two versions while both run. Every worker that runs a job
//!   also holds a runner lease on it, with the queues it serves: the catalogue knows which
//!   live workers run each job.
//! - **Known names.** A name is known while a worker renewed its writer lease in the last
//!   [`RECENT`] (7 days): a name no live or recent worker registered is refused by every
//!   by-name producer unless it says `force`.
//! - **Bounded.** At most [`MAX_JOBS`] names; a definition is made from a job's code (its
//!   name, signature and options), never from a request.
//!
//! Typed dispatches (`Job::call(..).dispatch()`) do not read the catalogue: the options are
//! compiled into them.

mod apply;
mod definition;

pub use crate::job::signature::{Backoff, Overlap, Signature};
pub use apply::Applied;
pub use definition::{Definition, Param, UniqueDefinition};

use std::time::Duration;

/// How long a name stays known after its last worker stopped renewing it.
pub const RECENT: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long a writer's or runner's lease lasts after its last renewal.
pub const LEASE: Duration = Duration::from_secs(60);
/// How often a worker renews its leases.
pub const RENEW_EVERY: Duration = Duration::from_secs(20);
/// The most job names the catalogue holds.
pub const MAX_JOBS: usize = 10_000;

/// A job the catalogue knows: its definition, who wrote it, and which live workers run it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Known {
    /// The published definition.
    pub definition: Definition,
    /// The worker that wrote it (holds, or last held, its writer lease).
    pub writer: String,
    /// Whether that writer's lease is still running (the writer is live).
    pub writer_live: bool,
    /// The live workers that run it.
    pub runners: Vec<Runner>,
}

/// A live worker that runs a job.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Runner {
    /// The worker's process id.
    pub worker: String,
    /// The queues it serves.
    pub queues: Vec<String>,
}

impl Known {
    /// Whether a live worker other than `except` runs this job and serves `queue`.
    pub fn runs_on(&self, queue: &str, except: &str) -> bool {
        self.runners
            .iter()
            .any(|r| r.worker != except && r.queues.iter().any(|q| q == queue))
    }
}
