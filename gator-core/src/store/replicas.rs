//! Waiting for replicas after an enqueue (`ClientBuilder::wait_for_replicas`): `WAIT` on the
//! node each written key lives on, once per hash tag, failing the dispatch unless enough
//! replicas confirmed every write.

use crate::error::{Error, Result};
use crate::transport::connection::Connection;
use crate::transport::replication::ReplicaWait;

/// Sends `WAIT` for each of `keys` (just written through `conn`) to the node that holds it,
/// once per slot, and fails unless `wait.replicas` replicas confirmed every one.
pub(crate) async fn confirm(
    conn: &mut Connection,
    wait: &ReplicaWait,
    keys: Vec<String>,
) -> Result<()> {
    let timeout_ms = u64::try_from(wait.timeout.as_millis())
        .unwrap_or(u64::MAX)
        .max(1);
    let mut tags: Vec<String> = Vec::new();
    for key in keys {
        // One WAIT per hash tag: keys of one queue share a slot.
        let tag = key
            .split_once('{')
            .and_then(|(_, rest)| rest.split_once('}'))
            .map_or(key.clone(), |(tag, _)| tag.to_owned());
        if tags.contains(&tag) {
            continue;
        }
        tags.push(tag);
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(wait.replicas).arg(timeout_ms);
        let reply = conn.send_to_node_of(&key, &cmd).await?;
        // As `query_async` reads a reply: a server error is an error, then the count.
        let confirmed: u32 =
            redis::from_redis_value(reply.extract_error()?).map_err(redis::RedisError::from)?;
        if confirmed < wait.replicas {
            return Err(Error::NotReplicated {
                confirmed,
                wanted: wait.replicas,
                timeout: wait.timeout,
            });
        }
    }
    Ok(())
}
