//! Finished jobs' status records, bounded by count as well as by time. A `done`, `cancelled`
//! or `discarded` record expires after the worker's retention, and its jid also goes on the
//! queue's finished list (newest first) in the same step; [`trim`] takes the oldest past the
//! count off it and deletes their records. So Redis holds at most about the count's records per
//! queue, whatever the throughput (plus what finished since the last trim: workers trim each
//! queue they settled successes on every second).

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;

/// How many finished jobs' records each queue keeps by default: as many as its dead set. About
/// 300 bytes each (the record, its expiry, its jid on the list): 3 MB a queue.
pub const DEFAULT_KEEP: usize = 10_000;

/// The most records one call of the script deletes, so no call holds Redis for long (about a
/// millisecond).
const MAX_PER_CALL: usize = 1_000;

/// The most calls one [`trim`] makes: a queue that finished more than this many thousands
/// since the last trim is trimmed further the next time.
const MAX_CALLS: usize = 100;

/// Deletes the records of `queue`'s oldest finished jobs past the newest `keep`; returns how
/// many it took off the list.
pub async fn trim(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    keep: usize,
) -> Result<usize> {
    let mut removed = 0;
    for _ in 0..MAX_CALLS {
        let taken: usize = scripts::FINISHED_TRIM
            .key(keys.finished(queue))
            .arg(keep)
            .arg(MAX_PER_CALL)
            .invoke_async(conn)
            .await?;
        removed += taken;
        if taken < MAX_PER_CALL {
            break;
        }
    }
    Ok(removed)
}
