//! Who holds what: each worker process's lease on each queue it fetches from, and the
//! recovery of the in-flight jobs of processes whose lease expired.
//!
//! A queue's lease set (`gator:{<queue>}:leases`) is also its in-flight index: a process has
//! an entry there before its first fetch (`fetch.lua` refuses to move a job otherwise), so
//! recovering a queue is one script in the queue's own slot that needs no global registry.
//! Every decision is taken on Redis time inside the scripts, so no host's clock is compared
//! with another's.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// What a process's lease on a queue was before `renew` renewed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// The process held no lease on the queue: a first fetch, or one long forgotten.
    New,
    /// The lease was live.
    Live,
    /// The lease had expired: the process's in-flight jobs of the queue may have been put back
    /// meanwhile, and may run twice.
    Expired,
}

/// Takes or renews `process`'s lease on `queue` for `ttl` (`lease.lua`); returns what it was
/// before and Redis's clock (ms since the epoch).
pub async fn renew(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
    ttl: Duration,
) -> Result<(LeaseState, u64)> {
    let (state, now): (i64, u64) = scripts::LEASE
        .key(keys.leases(queue))
        .arg(process)
        .arg(millis(ttl))
        .invoke_async(conn)
        .await?;
    let state = match state {
        1 => LeaseState::Live,
        2 => LeaseState::Expired,
        _ => LeaseState::New,
    };
    Ok((state, now))
}

/// Renews `process`'s leases on every queue of `queues` in one round trip (a pipeline of
/// `lease.lua` calls); returns, per queue in order, what its lease was before, and Redis's clock.
/// A renewal must not wait on another: after an outage every lease is due at once. (On a
/// cluster the shared connection sends the calls one by one.)
pub async fn renew_many(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[String],
    process: &str,
    ttl: Duration,
) -> Result<(Vec<LeaseState>, u64)> {
    if queues.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let mut pipe = redis::pipe();
    for queue in queues {
        pipe.cmd("EVALSHA")
            .arg(scripts::LEASE.get_hash())
            .arg(1)
            .arg(keys.leases(queue))
            .arg(process)
            .arg(millis(ttl));
    }
    let replies: Vec<(i64, u64)> = match pipe.query_async(conn).await {
        Ok(replies) => replies,
        // A restarted Redis has forgotten the script: load it, once, and send again. (A
        // pipeline does not reload it by itself as a single invocation does.)
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            scripts::LEASE.load_async(conn).await?;
            pipe.query_async(conn).await?
        }
        Err(e) => return Err(e.into()),
    };
    let now = replies.iter().map(|(_, now)| *now).max().unwrap_or(0);
    let states = replies
        .into_iter()
        .map(|(state, _)| match state {
            1 => LeaseState::Live,
            2 => LeaseState::Expired,
            _ => LeaseState::New,
        })
        .collect();
    Ok((states, now))
}

/// What one recovery pass over a queue did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Each process whose in-flight jobs went back to the queue, with how many.
    pub processes: Vec<(String, usize)>,
    /// When the earliest live lease of another process expires (ms, Redis time): the next
    /// moment a recovery could find something.
    pub next_expiry_ms: Option<u64>,
    /// Redis's clock during the pass (ms since the epoch).
    pub now_ms: u64,
}

impl Recovered {
    /// How many jobs went back to the queue.
    pub fn jobs(&self) -> usize {
        self.processes.iter().map(|(_, n)| n).sum()
    }
}

/// Puts the in-flight jobs of `queue` held by processes whose lease expired back at the head
/// of the queue, in one atomic step on Redis time (`recover.lua`). `own` is never recovered.
/// An expired entry is forgotten once it has been expired for `forget_after` with nothing in
/// flight. With `take_over`, `(prefix, spared)`, every other process of that prefix (a worker id,
/// or host, pid and lineage) is recovered whatever its lease, but those whose ids start with
/// `spared`: the calling OS process's own workers (see the wire format, "Liveness").
pub async fn recover(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    own: &str,
    forget_after: Duration,
    take_over: Option<(&str, &str)>,
) -> Result<Recovered> {
    let (prefix, spared) = take_over.unwrap_or(("", ""));
    let reply: Vec<redis::Value> = scripts::RECOVER
        .key(keys.leases(queue))
        .key(keys.queue(queue))
        .arg(keys.inflight_prefix(queue))
        .arg(millis(forget_after))
        .arg(own)
        .arg(prefix)
        .arg(spared)
        .invoke_async(conn)
        .await?;
    let mut values = reply.into_iter();
    let next: i64 = from_value(values.next())?;
    let now_ms: u64 = from_value(values.next())?;
    let mut processes = Vec::new();
    while let (Some(id), Some(count)) = (values.next(), values.next()) {
        processes.push((from_value(Some(id))?, from_value(Some(count))?));
    }
    Ok(Recovered {
        processes,
        next_expiry_ms: u64::try_from(next).ok(),
        now_ms,
    })
}

/// Puts every job of `process`'s own in-flight list for `queue` back at the head of the queue
/// and, with `release`, gives up its lease there, in one atomic step (`put_back.lua`);
/// returns how many jobs went back.
pub async fn put_back(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
    release: bool,
) -> Result<usize> {
    Ok(scripts::PUT_BACK
        .key(keys.inflight(queue, process))
        .key(keys.queue(queue))
        .key(keys.leases(queue))
        .arg(process)
        .arg(u8::from(release))
        .invoke_async(conn)
        .await?)
}

/// Every process with an entry in `queue`'s lease set, with when its lease expires (ms, Redis
/// time), soonest first.
pub async fn holders(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<Vec<(String, u64)>> {
    let rows: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(keys.leases(queue))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, expiry)| (id, expiry as u64))
        .collect())
}

/// `d` in whole ms, saturating (a lease of `Duration::MAX` is a very long lease, not a panic):
/// as `#[job]` turns its durations into ms ([`gator_rules::millis`]).
pub(crate) fn millis(d: Duration) -> u64 {
    gator_rules::millis(d)
}

fn from_value<T: redis::FromRedisValue>(value: Option<redis::Value>) -> Result<T> {
    let parsed = redis::from_redis_value(value.unwrap_or(redis::Value::Nil));
    Ok(parsed.map_err(redis::RedisError::from)?)
}
