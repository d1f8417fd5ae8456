//! The scheduled and retry sets: jobs that run later, and promoting them when due.

use crate::error::Result;
use crate::payload::Payload;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;

/// At most this many jobs move per script call, so one call never blocks Redis for long.
pub const PROMOTE_BATCH: usize = 1000;

/// Adds `payloads` to their queues' scheduled sets, due at `due_ms`, in one round trip.
/// The queue is recorded as known first, for the same reason as in [`super::queue::enqueue`].
pub async fn schedule(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payloads: &[Payload],
    due_ms: u64,
) -> Result<()> {
    let mut pipe = redis::pipe();
    for p in payloads {
        pipe.sadd(keys.queues(), &p.queue).ignore();
        pipe.zadd(keys.scheduled(&p.queue), p.to_json(), due_ms)
            .ignore();
    }
    pipe.query_async::<()>(conn).await?;
    Ok(())
}

/// What one promotion pass over a queue found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Promoted {
    /// How many jobs moved to the queue.
    pub moved: usize,
    /// When the earliest job still waiting in the queue's scheduled or retry set is due (ms).
    pub next_due_ms: Option<u64>,
}

/// Moves every job of `queue` due by `now_ms` from the scheduled and retry sets to the queue,
/// and says when the next one is due. Each batch is one atomic script call (`promote_due.lua`).
pub async fn promote_due(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    now_ms: u64,
) -> Result<Promoted> {
    let mut promoted = Promoted::default();
    for set in [keys.scheduled(queue), keys.retry(queue)] {
        loop {
            let (moved, next_due): (usize, i64) = scripts::PROMOTE_DUE
                .key(&set)
                .key(keys.queue(queue))
                .arg(now_ms)
                .arg(PROMOTE_BATCH)
                .invoke_async(conn)
                .await?;
            promoted.moved += moved;
            if moved < PROMOTE_BATCH {
                if let Ok(due) = u64::try_from(next_due) {
                    promoted.next_due_ms = Some(promoted.next_due_ms.map_or(due, |d| d.min(due)));
                }
                break;
            }
        }
    }
    Ok(promoted)
}
