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

pub use apply::Applied;
pub use definition::{Definition, Overlap, Param, UniqueDefinition};

use std::time::Duration;

/// How long a name stays known after its last worker stopped renewing it.
pub const RECENT: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long a writer's or runner's lease lasts after its last renewal.
pub const LEASE: Duration = Duration::from_secs(60);
/// How often a worker renews its leases.
pub const RENEW_EVERY: Duration = Duration::from_secs(20);
/// The most job names the catalogue holds.
pub const MAX_JOBS: usize = 10_000;

/// What `#[job]` knows of a job fn's signature and of the flow options it takes from its
/// arguments: the static half of a [`Definition`].
#[derive(Debug, Clone, Copy)]
pub struct Signature {
    /// The wire arguments, in order (not the `Context` or `State<T>` parameters); `None` for a
    /// hand-written `impl Job` that does not say (arity is then not checked).
    pub params: Option<&'static [(&'static str, &'static str)]>,
    /// Priority (`#[job(priority = ..)]`).
    pub priority: Option<u16>,
    /// Cost.
    pub cost: Option<u32>,
    /// Critical.
    pub critical: bool,
    /// The index of the argument whose value is the limit key (`limit_key = name`).
    pub limit_key_arg: Option<usize>,
    /// The index of the argument whose value is the fair key (`fair_key = name`).
    pub fair_key_arg: Option<usize>,
    /// The named rate limiter.
    pub rate: Option<&'static str>,
    /// The time windows, `HH:MM-HH:MM`.
    pub windows: &'static [&'static str],
    /// The windows' time zone.
    pub tz: Option<&'static str>,
    /// `no_overlap` (whole arguments) or `overlap_key = name` (one argument).
    pub overlap: Overlap,
    /// Where the delays between retries come from.
    pub backoff: Backoff,
}

/// Where a job's delays between retries come from, as the catalogue shows them. The default
/// curve has a random part, so its delays are not published: two workers would disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// Gator's default curve (Sidekiq's, with jitter), or a job that did not say.
    Default,
    /// `backoff = ["1s", "30s"]`: these delays in ms, the last repeating.
    List(&'static [u64]),
    /// `backoff = my_fn`: the job's own function.
    Custom,
}

impl Signature {
    /// A signature that says nothing: what a hand-written `impl Job` has unless it sets one.
    pub const UNKNOWN: Signature = Signature {
        params: None,
        priority: None,
        cost: None,
        critical: false,
        limit_key_arg: None,
        fair_key_arg: None,
        rate: None,
        windows: &[],
        tz: None,
        overlap: Overlap::None,
        backoff: Backoff::Default,
    };
}

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
