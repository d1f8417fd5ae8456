//! Where a queued job stands: `position.lua`, in one read-only script on the queue's slot,
//! bounded at any length.
//!
//! - In a plain queue's list: a binary search by jid (jids sort by creation time, and a plain
//!   queue is a FIFO list): log2(n) + 1 `LINDEX` and one `LRANGE` of 129. Nothing is written
//!   on dispatch or fetch for it: the plain path pays nothing.
//! - Parked in a controlled queue: `flow_lib.lua`'s `park` writes, in the job's status record
//!   it writes anyway, the set it parked the job in, its score and its sequence number
//!   (`queued <seq> <score> held <parking key>`, or `critical`), so the jobs before it are one
//!   `ZCOUNT` and a binary search by rank among equal scores.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;

/// What `position.lua` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// In its queue's list.
    Listed {
        /// The jobs before it in the list (0: it is fetched next).
        ahead: u64,
        /// Whether the job was found at that index; `false` if it was not where its jid sorts
        /// (then `ahead` is an estimate, or the job is not in the list).
        exact: bool,
        /// The list's length.
        length: u64,
    },
    /// Parked under flow control, where its status record says.
    Parked(ParkedAt),
    /// The queue is controlled, and the job is not where its record says: admitted just now
    /// (its record says `running` in a moment), or parked by a version that did not record
    /// its place.
    Elsewhere,
}

/// Where a parked job was found, and what decides when its parking key runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedAt {
    /// The jobs before it in its set (its parking key's, or the critical set).
    pub ahead: u64,
    /// The jobs in that set.
    pub length: u64,
    /// Its parking key (`flow_lib.lua`'s `parking_key`), or `None` for a critical job.
    pub key: Option<String>,
    /// The queue's parking keys whose head job may start now (`gator:{q}:ready`).
    pub ready_keys: u64,
    /// The queue's parking keys holding parked jobs: ready, blocked for their share of the
    /// limit, or timed by a rate limiter.
    pub waiting_keys: u64,
    /// Whether the queue is paused.
    pub paused: bool,
    /// Whether the queue runs in time windows.
    pub windows: bool,
}

/// Looks for `jid` in `queue`: in its status record's parking set, else in its list.
pub async fn find(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
) -> Result<Found> {
    let reply: Vec<redis::Value> = scripts::POSITION
        .key(keys.queue(queue))
        .key(keys.job(queue, jid))
        .arg(jid)
        .invoke_async(conn)
        .await?;
    let int = |i: usize| match reply.get(i) {
        Some(redis::Value::Int(n)) => (*n).max(0) as u64,
        _ => 0,
    };
    let (kind, a, b, c) = (int(0), int(1), int(2), int(3));
    let key = match reply.get(4) {
        Some(redis::Value::BulkString(bytes)) => String::from_utf8_lossy(bytes).into_owned(),
        _ => String::new(),
    };
    Ok(match kind {
        0 => Found::Listed {
            ahead: a,
            exact: b == 1,
            length: c,
        },
        1 => Found::Parked(ParkedAt {
            ahead: a,
            length: b,
            key: (c == 0).then_some(key),
            ready_keys: int(5),
            waiting_keys: int(6),
            paused: int(7) == 1,
            windows: int(8) == 1,
        }),
        _ => Found::Elsewhere,
    })
}
