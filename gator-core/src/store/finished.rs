//! Finished jobs' status records, bounded by count as well as by time. A `done`, `cancelled`
//! or `discarded` record's jid goes on the queue's finished list (newest first) in the step
//! that writes it; [`trim`] takes the oldest past the count off it and deletes their records,
//! and then those past the retention. A record with a key of its own also expires by itself; a
//! `done` record kept in its jid's bucket (`wire::jid`, where the queued mark was) ends only by
//! [`trim`]. So Redis holds at most about the count's records per queue, whatever the
//! throughput (plus what finished since the last trim: the fleet trims each queue its workers
//! serve about once a second). A queue no worker serves any more keeps what it had.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;

/// How many finished jobs' records each queue keeps by default: as many as its dead set. A
/// plain success's record, in its bucket, takes about 73 bytes with its jid on the list: about
/// 0.7 MB a queue (a record with a key of its own, about 240 bytes).
pub const DEFAULT_KEEP: usize = 10_000;

/// The most records one call of the script deletes, so no call holds Redis for long (about a
/// millisecond).
const MAX_PER_CALL: usize = 1_000;

/// The most calls one [`trim`] makes: a queue that finished more than this many thousands
/// since the last trim is trimmed further the next time.
const MAX_CALLS: usize = 100;

/// Deletes the records of `queue`'s oldest finished jobs past the newest `keep`, then those
/// older than `retention` (on Redis's clock); returns how many it took off the list.
pub async fn trim(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    keep: usize,
    retention: std::time::Duration,
) -> Result<usize> {
    let mut removed = 0;
    for _ in 0..MAX_CALLS {
        let taken: usize = scripts::FINISHED_TRIM
            .key(keys.finished(queue))
            .arg(keep)
            .arg(MAX_PER_CALL)
            .arg(super::status::retention_ms(retention))
            .invoke_async(conn)
            .await?;
        removed += taken;
        if taken < MAX_PER_CALL {
            break;
        }
    }
    Ok(removed)
}
