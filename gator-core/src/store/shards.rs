//! The shard counts of sharded queues (see `shards`): the global hash `gator:shards`,
//! written only by separate, idempotent commands.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::wire::shards::logical_queue;
use redis::aio::ConnectionLike;
use std::collections::HashMap;

/// The number of shards of `queue`: 1 when it is not sharded (or the entry is not a number).
pub async fn count(conn: &mut impl ConnectionLike, keys: &Keys, queue: &str) -> Result<u32> {
    let read = redis::cmd("HGET")
        .arg(keys.shards())
        .arg(queue)
        .query_async(conn)
        .await;
    let raw: Option<String> = super::broken::or_empty(&keys.shards(), read)?;
    Ok(parse(raw.as_deref()))
}

/// Every sharded queue and its number of shards (none if the hash is not one: every queue is
/// one list, [`super::broken`]).
pub async fn all(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<HashMap<String, u32>> {
    let read = redis::cmd("HGETALL")
        .arg(keys.shards())
        .query_async(conn)
        .await;
    let raw: HashMap<String, String> = super::broken::or_empty(&keys.shards(), read)?;
    Ok(raw
        .into_iter()
        .map(|(queue, count)| (queue, parse(Some(&count))))
        .filter(|(queue, count)| *count > 1 && logical_queue(queue) == queue)
        .collect())
}

/// Sets the number of shards of `queue` (1 removes the entry: the queue is one list again),
/// and records the queue and its shards in the known-queues set so that workers serving every
/// known queue find them.
pub async fn set(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    count: u32,
) -> Result<()> {
    let mut write = redis::cmd(if count <= 1 { "HDEL" } else { "HSET" });
    write.arg(keys.shards()).arg(queue);
    if count > 1 {
        write.arg(count);
    }
    let written = write.query_async::<()>(conn).await;
    written.map_err(|e| super::broken::of_key(&keys.shards(), e))?;
    let mut queues = vec![queue.to_owned()];
    queues.extend(
        (0..count.max(1))
            .filter(|_| count > 1)
            .map(|i| crate::wire::shards::shard_queue(queue, i)),
    );
    crate::store::queue::register(conn, keys, &queues).await
}

fn parse(raw: Option<&str>) -> u32 {
    raw.and_then(|n| n.trim().parse::<u32>().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(1)
}
