//! Where failed jobs go: the retry set (another attempt later) and the dead set (no more).

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
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

/// Puts a failed job (its updated payload text) in `queue`'s retry set, due at `at_ms`.
pub async fn retry_at(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    raw: &str,
    at_ms: u64,
) -> Result<()> {
    redis::cmd("ZADD")
        .arg(keys.retry(queue))
        .arg(at_ms)
        .arg(raw)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// Puts a job in `queue`'s dead set and trims the set to `cap` (`kill.lua`), in one step.
/// Returns the number of dead jobs left in the queue.
pub async fn kill(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    raw: &str,
    now_ms: u64,
    cap: DeadCap,
) -> Result<usize> {
    let oldest = now_ms.saturating_sub(cap.max_age.as_millis() as u64);
    Ok(scripts::KILL
        .key(keys.dead(queue))
        .arg(now_ms)
        .arg(raw)
        .arg(cap.max_jobs)
        .arg(oldest)
        .invoke_async(conn)
        .await?)
}
