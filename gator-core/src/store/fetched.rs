//! What crosses the settling rooms: a job a fetch took into flight ([`Fetched`]), what one
//! fetch found ([`Batch`]), and what settling a job into the dead set did ([`Killed`], or, for
//! a job with a deadline, [`Verdict`]). A leaf: it imports no other room of `store`, so the
//! rooms that fetch, settle, judge and cancel share these types without importing each other.

/// A job fetched by a process: where it came from and its payload exactly as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The queue it came from.
    pub queue: String,
    /// The process whose in-flight list holds it.
    pub process: String,
    /// The payload as stored: possibly not UTF-8, possibly not JSON (decoding is the caller's
    /// step, and a failure there is the job's outcome, not the fetch's).
    pub raw: Vec<u8>,
    /// Whether `admit.lua` started it (a controlled queue, see [`crate::flow`]): its success
    /// must release its units (`flow_ack.lua`), never be a bare `LREM`.
    pub admitted: bool,
}

/// What one `fetch.lua` call found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Batch {
    /// The jobs moved into flight, oldest first (none if the queue was empty).
    Jobs(Vec<Fetched>),
    /// The process holds no live lease on the queue: take one (`lease::renew`) and
    /// fetch again. Nothing was moved.
    NoLease,
    /// The queue is controlled ([`crate::flow`]): nothing was moved; fetch with
    /// `admit::admit`.
    Controlled,
}

/// The most jobs one `fetch.lua` call moves: the script pushes in chunks of 1,000 anyway, and a
/// bounded reply keeps one call short for Redis and for this process.
pub const MAX_BATCH: usize = 1000;

/// What settling a job into the dead set did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Killed {
    /// Whether the job was still in flight (and is now in the dead set).
    pub settled: bool,
    /// Chains whose waiting steps were left without a dead step to resume them, because the
    /// cap trimmed it: `(list queue, chain id)`. Delete their lists with
    /// `chain::forget`.
    pub orphaned_chains: Vec<(String, String)>,
}

/// What the settling script judged, on Redis's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Before its deadline: it starts; its record says `running` since `at_ms`.
    InTime {
        /// When it was judged (ms, Redis time): its start.
        at_ms: u64,
    },
    /// At or past its deadline: settled as expired at the time judged (`settled` false if it
    /// was no longer in flight; `orphaned_chains` as a death's, see [`Killed`]).
    Expired(Killed),
}
