//! The indexes of chains and workflows by the queue whose hash tag holds them, so the dashboard
//! can list those in flight without scanning the keyspace (a `SCAN` would have to visit every
//! node of a cluster, and every key).
//!
//! An id is added by a command of its own before the chain or workflow is stored, as the
//! known-queues set is written before an enqueue: a failure between the two leaves an id whose
//! chain or workflow does not exist, which the reader prunes, never a chain the index misses.
//! Each add also trims the index to its newest [`INDEX_CAP`] ids, so it stays bounded even if
//! nobody ever reads it.

use crate::error::Result;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;

/// The most ids an index keeps, newest first: the dashboard lists at most the newest 10,000
/// chains (and workflows) of each queue in flight.
pub const INDEX_CAP: isize = 10_000;

/// Chain or workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JourneyKind {
    /// A chain: its list of waiting steps lives under its first queue's tag.
    Chain,
    /// A workflow: its hash lives under its home queue's tag.
    Workflow,
}

impl JourneyKind {
    /// The index of `queue` for this kind.
    pub fn index(self, keys: &Keys, queue: &str) -> String {
        match self {
            JourneyKind::Chain => keys.chains_index(queue),
            JourneyKind::Workflow => keys.workflows_index(queue),
        }
    }
}

/// Records `id` in `queue`'s index of `kind`, scored `at_ms`, and trims the index: one
/// pipeline, idempotent (`ZADD NX`).
pub async fn add(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: JourneyKind,
    queue: &str,
    id: &str,
    at_ms: u64,
) -> Result<()> {
    let index = kind.index(keys, queue);
    redis::pipe()
        .cmd("ZADD")
        .arg(&index)
        .arg("NX")
        .arg(at_ms)
        .arg(id)
        .ignore()
        .cmd("ZREMRANGEBYRANK")
        .arg(&index)
        .arg(0)
        .arg(-INDEX_CAP - 1)
        .ignore()
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// Up to `count` ids of `queue`'s index of `kind`, newest first, with their scores.
pub async fn newest(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: JourneyKind,
    queue: &str,
    count: usize,
) -> Result<Vec<(String, u64)>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(kind.index(keys, queue))
        .arg(0)
        .arg(count as isize - 1)
        .arg("REV")
        .arg("WITHSCORES")
        .query_async(conn)
        .await?;
    Ok(rows.into_iter().map(|(id, at)| (id, at as u64)).collect())
}

/// Removes ids of finished (or never stored) chains or workflows from `queue`'s index.
pub async fn prune(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: JourneyKind,
    queue: &str,
    ids: &[String],
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    redis::cmd("ZREM")
        .arg(kind.index(keys, queue))
        .arg(ids)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// How many steps wait in each of chains `ids` of `queue` (0 for one that finished).
pub async fn chain_lengths(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    ids: &[&str],
) -> Result<Vec<usize>> {
    let mut pipe = redis::pipe();
    for id in ids {
        pipe.llen(keys.chain(queue, id));
    }
    Ok(pipe.query_async(conn).await?)
}
