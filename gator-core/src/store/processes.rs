//! The registry of live worker processes: each one heartbeats, so others can count them (to
//! spread polling) and spot the ones that died.

use crate::error::Result;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// Records that process `id` (described by `info`, JSON) is alive now; its description expires
/// after `ttl` unless renewed. Global keys only, so one pipeline, not a per-queue script.
pub async fn beat(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    id: &str,
    info: &str,
    now_ms: u64,
    ttl: Duration,
) -> Result<()> {
    redis::pipe()
        .cmd("SET")
        .arg(keys.process(id))
        .arg(info)
        .arg("PX")
        .arg(ttl.as_millis() as u64)
        .ignore()
        .zadd(keys.processes(), id, now_ms)
        .ignore()
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// How many processes have beaten within `ttl` of `now_ms` (at least 1: the caller).
pub async fn live_count(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    now_ms: u64,
    ttl: Duration,
) -> Result<usize> {
    let since = now_ms.saturating_sub(ttl.as_millis() as u64);
    let n: usize = redis::cmd("ZCOUNT")
        .arg(keys.processes())
        .arg(since)
        .arg("+inf")
        .query_async(conn)
        .await?;
    Ok(n.max(1))
}

/// The ids of processes whose last heartbeat is older than `ttl`.
pub async fn expired(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    now_ms: u64,
    ttl: Duration,
) -> Result<Vec<String>> {
    let before = now_ms.saturating_sub(ttl.as_millis() as u64);
    Ok(redis::cmd("ZRANGE")
        .arg(keys.processes())
        .arg("-inf")
        .arg(format!("({before}"))
        .arg("BYSCORE")
        .query_async(conn)
        .await?)
}

/// Every registered process id, live or not.
pub async fn all(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<Vec<String>> {
    Ok(redis::cmd("ZRANGE")
        .arg(keys.processes())
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?)
}

/// Forgets process `id` (a clean exit, or once its orphans are recovered).
pub async fn remove(conn: &mut impl ConnectionLike, keys: &Keys, id: &str) -> Result<()> {
    redis::pipe()
        .cmd("DEL")
        .arg(keys.process(id))
        .ignore()
        .zrem(keys.processes(), id)
        .ignore()
        .query_async::<()>(conn)
        .await?;
    Ok(())
}
