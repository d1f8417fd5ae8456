//! The dead set's cap. (Jobs reach the retry and dead sets through `store::inflight`, which
//! settles them out of their process's in-flight list in the same step.)

use std::time::Duration;

/// How much of the dead set is kept, per queue: the oldest entries go first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadCap {
    /// The most entries kept (default 10,000).
    pub max_jobs: usize,
    /// Entries older than this are removed (default about six months).
    pub max_age: Duration,
}

impl Default for DeadCap {
    fn default() -> Self {
        DeadCap {
            max_jobs: 10_000,
            max_age: Duration::from_secs(180 * 24 * 3600),
        }
    }
}
