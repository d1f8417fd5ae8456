//! Chains in Redis: the first step on its queue, the rest in the chain's list, and moving the
//! next step to its queue when one succeeds.

use crate::error::Result;
use crate::payload::{ChainLink, Payload};
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;

/// Stores a chain whose steps already carry their links: the queues go in the known set, the
/// steps after the first in the chain's list, and the first on its queue (or in its scheduled
/// set, due at `due_ms`). One MULTI, so a chain is stored whole or not at all.
pub async fn create(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    steps: &[Payload],
    due_ms: Option<u64>,
) -> Result<()> {
    let Some((first, rest)) = steps.split_first() else {
        return Ok(());
    };
    let mut pipe = redis::pipe();
    pipe.atomic();
    for step in steps {
        pipe.sadd(keys.queues(), &step.queue).ignore();
    }
    if let (false, Some(link)) = (rest.is_empty(), &first.chain) {
        let waiting: Vec<String> = rest.iter().map(Payload::to_json).collect();
        pipe.rpush(keys.chain(&link.list_queue, &link.id), waiting)
            .ignore();
    }
    match due_ms {
        Some(due) => pipe
            .zadd(keys.scheduled(&first.queue), first.to_json(), due)
            .ignore(),
        None => pipe
            .rpush(keys.queue(&first.queue), first.to_json())
            .ignore(),
    };
    pipe.query_async::<()>(conn).await?;
    Ok(())
}

/// After the step holding `link` succeeded: enqueues the next step (`chain_advance.lua`).
/// Returns false if there was none to move (last step, or already moved).
pub async fn advance(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    link: &ChainLink,
) -> Result<bool> {
    let (Some(next_jid), Some(next_queue)) = (&link.next_jid, &link.next_queue) else {
        return Ok(false);
    };
    let moved: i64 = scripts::CHAIN_ADVANCE
        .key(keys.chain(&link.list_queue, &link.id))
        .key(keys.queue(next_queue))
        .arg(next_jid)
        .invoke_async(conn)
        .await?;
    Ok(moved == 1)
}
