//! Waiting for replicas after an enqueue: Redis replicates asynchronously, so a job whose
//! enqueue was acknowledged can still be lost if its master dies before a replica copied it
//! (a failover of a Redis Cluster or a Sentinel set promotes the replica without it). A client
//! built with `ClientBuilder::wait_for_replicas` follows each enqueue with
//! `WAIT <replicas> <timeout>` and fails the dispatch (`Error::NotReplicated`) unless
//! enough replicas confirmed it, so that an `Ok` means the job survives the loss of its master.
//! (The server-side alternative is `min-replicas-to-write`, which refuses writes instead.)

use crate::error::{Error, Result};
use std::time::Duration;

/// How many replicas must confirm each enqueue, within how long: set by
/// `GATOR_WAIT_REPLICAS` (and `GATOR_WAIT_TIMEOUT`, default [`DEFAULT_WAIT_TIMEOUT`]) when
/// the builder does not.
pub const WAIT_REPLICAS_ENV: &str = "GATOR_WAIT_REPLICAS";
/// See [`WAIT_REPLICAS_ENV`]: a duration such as `100ms` or `1s`.
pub const WAIT_TIMEOUT_ENV: &str = "GATOR_WAIT_TIMEOUT";
/// How long a dispatch waits for its replicas unless told otherwise.
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_millis(500);

/// How many replicas must have each enqueue before a dispatch returns, and how long it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaWait {
    /// Replicas that must confirm (1 for a master with one replica).
    pub replicas: u32,
    /// The longest a dispatch waits for them.
    pub timeout: Duration,
}

impl ReplicaWait {
    /// What `GATOR_WAIT_REPLICAS` / `GATOR_WAIT_TIMEOUT` ask for; `None` when unset or 0.
    pub fn from_env() -> Result<Option<ReplicaWait>> {
        let Ok(replicas) = std::env::var(WAIT_REPLICAS_ENV) else {
            return Ok(None);
        };
        let replicas: u32 = replicas.trim().parse().map_err(|_| Error::InvalidSetting {
            name: WAIT_REPLICAS_ENV,
            value: replicas.clone(),
            expected: "a whole number of replicas",
        })?;
        let timeout = match std::env::var(WAIT_TIMEOUT_ENV) {
            Ok(raw) => {
                gator_rules::parse_duration(raw.trim()).map_err(|_| Error::InvalidSetting {
                    name: WAIT_TIMEOUT_ENV,
                    value: raw.clone(),
                    expected: "a duration such as 100ms or 1s",
                })?
            }
            Err(_) => DEFAULT_WAIT_TIMEOUT,
        };
        Ok((replicas > 0).then_some(ReplicaWait { replicas, timeout }))
    }
}
