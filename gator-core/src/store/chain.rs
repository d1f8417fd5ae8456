//! Chains in Redis: the first step on its queue (or scheduled), the rest in the chain's list.
//! (A step's success moves the next one to its queue in `ack.lua`, see `store::inflight::ack`.)

use crate::error::Result;
use crate::payload::Payload;
use crate::store::keys::Keys;
use crate::store::schedule::{self, When};
use redis::aio::ConnectionLike;

/// Stores a chain whose steps already carry their links: the queues go in the known set, then
/// in one script (`schedule.lua`) the steps after the first in the chain's list and the first
/// on its queue, or in its scheduled set if `when` is still ahead on Redis's clock, so a chain
/// is stored whole or not at all.
///
/// The known set is a global key, so it stays out of the script (Redis Cluster), and is
/// written first, as an enqueue does: a failure between the two leaves a queue listed, never a
/// step nobody looks for.
pub async fn create(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    steps: &[Payload],
    when: When,
) -> Result<()> {
    let Some((first, rest)) = steps.split_first() else {
        return Ok(());
    };
    let queues: Vec<String> = steps.iter().map(|step| step.queue.clone()).collect();
    super::queue::register(conn, keys, &queues).await?;
    let list = match (&first.chain, rest.is_empty()) {
        (Some(link), false) => Some(keys.chain(&link.list_queue, &link.id)),
        _ => None,
    };
    let waiting = list.as_deref().map(|key| (key, rest));
    schedule::schedule(conn, keys, first, when, waiting).await?;
    Ok(())
}

/// Deletes the waiting lists of `chains` (`(list queue, chain id)`): chains whose dead step
/// left the dead set without being retried (trimmed by the cap, or deleted), so nothing could
/// ever resume them. One DEL per chain, each on its own key's slot; deleting twice is harmless.
pub async fn forget(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    chains: &[(String, String)],
) -> Result<()> {
    for (queue, id) in chains {
        if super::keys::validate_queue(queue).is_err() {
            continue; // not a key Gator would have written: leave it alone
        }
        redis::cmd("DEL")
            .arg(keys.chain(queue, id))
            .query_async::<()>(conn)
            .await?;
    }
    Ok(())
}
