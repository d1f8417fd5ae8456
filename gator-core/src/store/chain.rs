//! Chains in Redis: the first step on its queue (or scheduled), the rest in the chain's list
//! under the first queue's hash tag. (The outbox also carries workflow steps' ends: see
//! `store::workflow`.) A step's success records the hand-off of the next step in
//! its own queue's outbox (`ack.lua`, see `store::inflight::ack`), and the hand-off room
//! (`store::handoff`) has [`hand_on`] move that step to its queue, which may live under
//! another tag, on another cluster node.

use crate::error::Result;
use crate::payload::Payload;
use crate::store::handed::HANDED_GUARD;
use crate::store::keys::Keys;
use crate::store::schedule::{self, When};
use crate::store::scripts;
use crate::transport::connection::Connection;
use crate::transport::replication::ReplicaWait;
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
        (Some(link), false) => {
            let now = crate::payload::now_ms();
            let kind = super::journeys::JourneyKind::Chain;
            super::journeys::add(conn, keys, kind, &link.list_queue, &link.id, now).await?;
            Some(keys.chain(&link.list_queue, &link.id))
        }
        _ => None,
    };
    let waiting = list.as_deref().map(|key| (key, rest));
    schedule::schedule(conn, keys, first, when, waiting).await?;
    Ok(())
}

/// Moves chain `id`'s next step `jid` (waiting in `list_queue`'s chain list) to `next_queue`:
/// `chain_take.lua` in the slot of the chain's list, `chain_push.lua` in the slot of the next
/// queue, then `HDEL` of the taken step. Each step is idempotent, so running this again after
/// a crash anywhere, or twice at once, moves the step once and never loses it (the hand-off
/// room, `store::handoff`, calls it for a chain link in an outbox).
///
/// With `wait`, the pushed step must reach the next queue's replicas before its copy under the
/// chain's tag is deleted: on a cluster the two live on different masters, and a failover of
/// the next queue's master must not lose the step after the copy is gone.
pub async fn hand_on(
    conn: &mut Connection,
    keys: &Keys,
    (id, list_queue): (&str, &str),
    (jid, next_queue): (&str, &str),
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    let taken: Option<String> = scripts::CHAIN_TAKE
        .key(keys.chain(list_queue, id))
        .key(keys.handoff(list_queue))
        .arg(jid)
        .invoke_async(conn)
        .await?;
    let Some(step) = taken else {
        return Ok(());
    };
    scripts::CHAIN_PUSH
        .key(keys.handed(next_queue, jid))
        .key(keys.queue(next_queue))
        .arg(&step)
        .arg(super::lease::millis(HANDED_GUARD))
        .invoke_async::<i64>(conn)
        .await?;
    if let Some(wait) = wait {
        super::replicas::confirm(conn, wait, vec![keys.queue(next_queue)]).await?;
    }
    redis::cmd("HDEL")
        .arg(keys.handoff(list_queue))
        .arg(jid)
        .query_async::<()>(conn)
        .await?;
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
        if super::keys::validate_stored_queue(queue).is_err() {
            continue; // not a key Gator would have written: leave it alone
        }
        redis::cmd("DEL")
            .arg(keys.chain(queue, id))
            .query_async::<()>(conn)
            .await?;
    }
    Ok(())
}
