//! Chains in Redis: the first step on its queue, the rest in the chain's list. (A step's
//! success moves the next one to its queue in `ack.lua`, see `store::inflight::ack`.)

use crate::error::Result;
use crate::payload::Payload;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;

/// Stores a chain whose steps already carry their links: the queues go in the known set, then
/// in one MULTI the steps after the first in the chain's list and the first on its queue (or in
/// its scheduled set, due at `due_ms`), so a chain is stored whole or not at all.
///
/// The known set is a global key, so it stays out of the MULTI (Redis Cluster), and is written
/// first, as an enqueue does: a failure between the two leaves a queue listed, never a step
/// nobody looks for.
pub async fn create(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    steps: &[Payload],
    due_ms: Option<u64>,
) -> Result<()> {
    let Some((first, rest)) = steps.split_first() else {
        return Ok(());
    };
    let queues: Vec<String> = steps.iter().map(|step| step.queue.clone()).collect();
    super::queue::register(conn, keys, &queues).await?;
    let mut pipe = redis::pipe();
    pipe.atomic();
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
