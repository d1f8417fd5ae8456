//! Chains in Redis: the first step on its queue (or scheduled), the rest in the chain's list
//! under the first queue's hash tag. (The outbox also carries workflow steps' ends: see
//! `store::workflow`.) A step's success records the hand-off of the next step in
//! its own queue's outbox (`ack.lua`, see `store::inflight::ack`), and [`advance`] moves that
//! step to its queue, which may live under another tag, on another cluster node.

use crate::error::Result;
use crate::payload::ChainLink;
use crate::payload::Payload;
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

/// How long the guard that makes a hand-off idempotent is kept: far longer than any outbox
/// record waits for its drain.
pub const HANDED_GUARD: std::time::Duration = std::time::Duration::from_secs(3600);

/// Moves the next step named by the hand-off `record` (from `queue`'s outbox) to its queue,
/// then removes the record: `chain_take.lua` in the slot of the chain's list, `chain_push.lua`
/// in the slot of the next queue, `HDEL` of the taken step, `LREM` of the record. Each step is
/// idempotent, so running this again after a crash anywhere, or twice at once, moves the step
/// once and never loses it.
///
/// With `wait`, the pushed step must reach the next queue's replicas before its copy under the
/// chain's tag is deleted: on a cluster the two live on different masters, and a failover of
/// the next queue's master must not lose the step after the copy is gone.
pub async fn advance(
    conn: &mut Connection,
    keys: &Keys,
    queue: &str,
    record: &str,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    // A workflow step's end, for its workflow's home slot (see `store::workflow`).
    if let Ok(report) = serde_json::from_str::<super::workflow::Report>(record) {
        if super::workflow::split_id(&report.wf).is_ok() {
            super::workflow::report(conn, keys, &report, wait).await?;
        }
    } else if let Ok(waiting) = serde_json::from_str::<super::reply::WaitRecord>(record) {
        // A job's wait for a reply, for the replies' slot (see `store::reply`).
        let lookback = super::reply::DEFAULT_LOOKBACK;
        if super::reply::register(conn, keys, &waiting, lookback).await? {
            super::reply::drain(conn, keys, wait).await?;
        }
    } else if let Some(ChainLink {
        id,
        list_queue,
        next_jid: Some(jid),
        next_queue: Some(next_queue),
    }) = serde_json::from_str::<ChainLink>(record).ok()
        && super::keys::validate_stored_queue(&list_queue).is_ok()
        && super::keys::validate_stored_queue(&next_queue).is_ok()
    {
        let taken: Option<String> = scripts::CHAIN_TAKE
            .key(keys.chain(&list_queue, &id))
            .key(keys.handoff(&list_queue))
            .arg(&jid)
            .invoke_async(conn)
            .await?;
        if let Some(step) = taken {
            scripts::CHAIN_PUSH
                .key(keys.handed(&next_queue, &jid))
                .key(keys.queue(&next_queue))
                .arg(&step)
                .arg(super::lease::millis(HANDED_GUARD))
                .invoke_async::<i64>(conn)
                .await?;
            if let Some(wait) = wait {
                super::replicas::confirm(conn, wait, vec![keys.queue(&next_queue)]).await?;
            }
            redis::cmd("HDEL")
                .arg(keys.handoff(&list_queue))
                .arg(&jid)
                .query_async::<()>(conn)
                .await?;
        }
    }
    // A record that does not parse names nothing to move: dropping it loses nothing.
    redis::cmd("LREM")
        .arg(keys.outbox(queue))
        .arg(1)
        .arg(record)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// Pushes `payload` to the queue it names, once (`chain_push.lua`, guarded by
/// `gator:{<queue>}:handed:<guard>`), first adding the queue to the known set when `register`,
/// and with `wait` once a replica has it: how a released workflow step or a reply's handler
/// reaches its queue. Returns false if the payload names no valid queue (it is left where it
/// is, for a person to see, rather than dropped).
pub async fn push_once(
    conn: &mut Connection,
    keys: &Keys,
    payload: &str,
    guard: &str,
    register: bool,
    wait: Option<&ReplicaWait>,
) -> Result<bool> {
    #[derive(serde::Deserialize)]
    struct Queue {
        queue: String,
    }
    let Some(queue) = serde_json::from_str::<Queue>(payload)
        .ok()
        .map(|q| q.queue)
        .filter(|q| super::keys::validate_stored_queue(q).is_ok())
    else {
        return Ok(false);
    };
    if register {
        super::queue::register(conn, keys, std::slice::from_ref(&queue)).await?;
    }
    scripts::CHAIN_PUSH
        .key(keys.handed(&queue, guard))
        .key(keys.queue(&queue))
        .arg(payload)
        .arg(super::lease::millis(HANDED_GUARD))
        .invoke_async::<i64>(conn)
        .await?;
    if let Some(wait) = wait {
        super::replicas::confirm(conn, wait, vec![keys.queue(&queue)]).await?;
    }
    Ok(true)
}

/// Finishes every hand-off waiting in `queue`'s outbox (those a crash or an outage left
/// behind); returns how many it found.
pub async fn drain_outbox(
    conn: &mut Connection,
    keys: &Keys,
    queue: &str,
    wait: Option<&ReplicaWait>,
) -> Result<usize> {
    let records: Vec<String> = redis::cmd("LRANGE")
        .arg(keys.outbox(queue))
        .arg(0)
        .arg(99)
        .query_async(conn)
        .await?;
    for record in &records {
        advance(conn, keys, queue, record, wait).await?;
    }
    Ok(records.len())
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
