//! Where a queued job stands in its queue's list: `position.lua`, a binary search by jid
//! (jids sort by creation time, and a plain queue is a FIFO list), so the cost is bounded at
//! any length: log2(n) + 1 `LINDEX` and one `LRANGE` of 129, in one script on the queue's slot.
//! Nothing is written on dispatch or fetch for it: the plain path pays nothing.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;

/// What `position.lua` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// The jobs before it in the list (0: it is fetched next).
    pub ahead: u64,
    /// Whether the job was found at that index; `false` if it was not where its jid sorts
    /// (then `ahead` is an estimate, or the job is not in the list).
    pub exact: bool,
    /// The list's length.
    pub length: u64,
}

/// Looks for `jid` in `queue`'s list; `None` if the queue is controlled (its list key holds
/// the marker: its jobs are parked, not listed).
pub async fn find(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
) -> Result<Option<Found>> {
    let (ahead, exact, length): (i64, i64, u64) = scripts::POSITION
        .key(keys.queue(queue))
        .arg(jid)
        .invoke_async(conn)
        .await?;
    Ok((ahead >= 0).then_some(Found {
        ahead: ahead as u64,
        exact: exact == 1,
        length,
    }))
}
