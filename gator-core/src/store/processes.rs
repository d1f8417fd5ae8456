//! The registry of live worker processes, for counting the fleet (the poller spreads its
//! passes over it) and showing it. Liveness for recovery is not decided here: each process
//! holds a lease per queue (`store::lease`), in the queue's own hash tag.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::lease::millis;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// What a worker process says of itself under its process key ([`Keys::process`]), as JSON:
/// written by every heartbeat, read by `Admin::processes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Description {
    /// Its process id.
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// Its pid there.
    pub pid: u32,
    /// Its `--worker-id`, if any.
    pub worker_id: Option<String>,
    /// Its `--queues`, as given.
    pub queues: String,
    /// Jobs it may run at once.
    pub concurrency: u32,
    /// Its lease (ms): a heartbeat comes every quarter of it.
    pub lease_ms: u64,
    /// When it started (ms, Redis time as it estimated it).
    pub started_at: u64,
}

/// What one heartbeat learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beat {
    /// Live worker processes, the caller included.
    pub live: usize,
    /// Redis's clock (ms since the epoch).
    pub now_ms: u64,
}

/// Records that process `id` (described by `info`, JSON) is alive, on Redis time, until `ttl`
/// from now unless renewed; prunes expired processes and counts the live ones
/// (`heartbeat.lua`). The description is a separate `SET … PX`, since global keys are written
/// by their own commands.
pub async fn beat(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    id: &str,
    info: &str,
    ttl: Duration,
) -> Result<Beat> {
    let counted = scripts::HEARTBEAT
        .key(keys.processes())
        .arg(id)
        .arg(millis(ttl))
        .invoke_async(conn)
        .await;
    // A registry of another type (super::broken): this process counts itself alone, and still
    // learns Redis's clock.
    let (live, now_ms): (usize, u64) = match super::broken::or_empty(&keys.processes(), counted)? {
        (0, 0) => (1, super::server::time(conn).await?),
        counted => counted,
    };
    redis::cmd("SET")
        .arg(keys.process(id))
        .arg(info)
        .arg("PX")
        .arg(millis(ttl).max(1))
        .query_async::<()>(conn)
        .await?;
    Ok(Beat {
        live: live.max(1),
        now_ms,
    })
}

/// Forgets process `id` (a clean exit that put back everything it held).
pub async fn remove(conn: &mut impl ConnectionLike, keys: &Keys, id: &str) -> Result<()> {
    let removed = redis::pipe()
        .cmd("DEL")
        .arg(keys.process(id))
        .ignore()
        .zrem(keys.processes(), id)
        .ignore()
        .query_async::<()>(conn)
        .await;
    super::broken::or_empty(&keys.processes(), removed)
}

/// The processes registered and not expired at `now` (ms, Redis time), with the time their
/// registration expires.
pub async fn live(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    now: u64,
) -> Result<Vec<(String, f64)>> {
    let read = redis::cmd("ZRANGE")
        .arg(keys.processes())
        .arg(now)
        .arg("+inf")
        .arg("BYSCORE")
        .arg("WITHSCORES")
        .query_async(conn)
        .await;
    super::broken::or_empty(&keys.processes(), read)
}

/// The descriptions ([`Description`], JSON) of processes `ids`, in order; `None` for one that
/// expired meanwhile.
pub async fn descriptions(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    ids: &[&str],
) -> Result<Vec<Option<String>>> {
    let mut pipe = redis::pipe();
    for id in ids {
        pipe.get(keys.process(id));
    }
    Ok(pipe.query_async(conn).await?)
}

/// The processes in the lease index of each of `queues`. A queue whose index is not one (a key
/// written by hand) counts as held by none, not as the fleet's failure: its row in
/// `queue_infos` says it is broken.
pub async fn lease_holders(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[String],
) -> Result<Vec<Vec<String>>> {
    if queues.is_empty() {
        // No queue known yet (a fleet started on an empty Redis): an empty pipeline is an
        // error, not an empty answer.
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for queue in queues {
        pipe.zrange(keys.leases(queue), 0, -1);
    }
    Ok(pipe
        .ignore_errors()
        .query_async::<Vec<redis::RedisResult<Vec<String>>>>(conn)
        .await?
        .into_iter()
        .map(|read| read.unwrap_or_default())
        .collect())
}

/// The payloads in `process`'s in-flight lists of `queues`, one list per queue (a list that is
/// not one, written by hand, reads as empty).
pub async fn in_flight(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    process: &str,
    queues: &[&str],
) -> Result<Vec<Vec<String>>> {
    let mut pipe = redis::pipe();
    for queue in queues {
        pipe.lrange(keys.inflight(queue, process), 0, -1);
    }
    Ok(pipe
        .ignore_errors()
        .query_async::<Vec<redis::RedisResult<Vec<String>>>>(conn)
        .await?
        .into_iter()
        .map(|read| read.unwrap_or_default())
        .collect())
}
