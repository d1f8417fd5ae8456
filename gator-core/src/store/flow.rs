//! Flow control in Redis (see [`crate::flow`] for the model and `lua/flow_lib.lua` for the
//! keys): the settings, shared limiters, and what a queue's controls look like right now. The
//! fetch side (admit, ack, the signal wait) is [`super::admit`].

use crate::error::Result;
use crate::flow::{FlowSetting, RateSpec};
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use std::collections::HashSet;

/// Applies `settings` to `queue`, making it controlled: first records it in the global set of
/// controlled queues (so workers learn to admit from it), then changes its flow hash in one
/// script, which also wakes its waiting workers.
pub async fn set(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    settings: &[FlowSetting],
) -> Result<()> {
    crate::store::keys::validate_queue(queue)?;
    let fields = settings
        .iter()
        .map(FlowSetting::field)
        .collect::<Result<Vec<_>>>()?;
    register(conn, keys, &[queue]).await?;
    let mut call = scripts::FLOW_SET.key(keys.flow(queue));
    for (field, value) in &fields {
        call.arg(field).arg(value);
    }
    call.invoke_async::<()>(conn).await?;
    Ok(())
}

/// Records `queues` in the global set of controlled queues (idempotent); skipped if the set
/// is not one ([`super::broken`]): a worker learns a queue is controlled from its first fetch.
pub async fn register(conn: &mut impl ConnectionLike, keys: &Keys, queues: &[&str]) -> Result<()> {
    let added = redis::cmd("SADD")
        .arg(keys.flow_queues())
        .arg(queues)
        .query_async::<()>(conn)
        .await;
    super::broken::or_empty(&keys.flow_queues(), added)
}

/// How many jobs wait parked in controlled `queue` (and in its backlog), whatever holds them
/// back.
pub async fn parked(conn: &mut impl ConnectionLike, keys: &Keys, queue: &str) -> Result<usize> {
    let mut total: usize = redis::cmd("ZCARD")
        .arg(keys.critical(queue))
        .query_async(conn)
        .await?;
    total += redis::cmd("LLEN")
        .arg(keys.backlog(queue))
        .query_async::<usize>(conn)
        .await?;
    for parking_key in parking_keys(conn, keys, queue).await?.all() {
        total += redis::cmd("ZCARD")
            .arg(keys.held(queue, parking_key))
            .query_async::<usize>(conn)
            .await?;
    }
    Ok(total)
}

/// The parking keys of a controlled queue, by what they wait for (see `lua/flow_lib.lua`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParkingKeys {
    /// Keys whose head job may start now.
    pub ready: Vec<String>,
    /// Keys waiting for their rate limiter.
    pub timed: Vec<String>,
    /// Keys waiting for their share of the limit.
    pub blocked: Vec<String>,
}

impl ParkingKeys {
    /// Every key, whatever it waits for.
    pub fn all(&self) -> impl Iterator<Item = &String> {
        self.ready.iter().chain(&self.timed).chain(&self.blocked)
    }
}

/// The parking keys of controlled `queue`: its `ready` and `timed` sets and `blocked` set.
pub async fn parking_keys(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<ParkingKeys> {
    Ok(ParkingKeys {
        ready: zmembers(conn, &keys.ready(queue)).await?,
        timed: zmembers(conn, &keys.timed(queue)).await?,
        blocked: redis::cmd("SMEMBERS")
            .arg(keys.blocked(queue))
            .query_async(conn)
            .await?,
    })
}

/// The payload of a member of a controlled queue's critical set or of a parking key's set:
/// parking prefixes it with a 16-digit sequence number that keeps equal scores in FIFO order
/// (`flow_lib.lua`'s `park`).
pub fn parked_payload(member: &str) -> &str {
    match member.get(..16) {
        Some(seq) if seq.bytes().all(|b| b.is_ascii_digit()) => &member[16..],
        _ => member,
    }
}

/// The queues known to be controlled (none if the set is not one, [`super::broken`]).
pub async fn controlled(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<HashSet<String>> {
    let read = redis::cmd("SMEMBERS")
        .arg(keys.flow_queues())
        .query_async(conn)
        .await;
    super::broken::or_empty(&keys.flow_queues(), read)
}

/// Sets (or with `None` removes) shared rate limiter `name`: obeyed by the jobs that name it
/// (`#[job(rate = "...")]`, `PendingJob::rate_limiter`) on every queue that does not
/// define a limiter of that name itself. First records the name in the global set of shared
/// limiters, then writes its rate (two commands: different slots).
pub async fn set_shared_rate(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    name: &str,
    rate: Option<RateSpec>,
) -> Result<()> {
    crate::flow::check_limiter_name(name)?;
    match rate {
        Some(rate) => {
            let added = redis::cmd("SADD")
                .arg(keys.limiters())
                .arg(name)
                .query_async::<()>(conn)
                .await;
            super::broken::or_empty(&keys.limiters(), added)?;
            redis::cmd("SET")
                .arg(keys.limiter_rate(name))
                .arg(rate.stored())
                .query_async::<()>(conn)
                .await?;
        }
        None => {
            redis::cmd("DEL")
                .arg(keys.limiter_rate(name))
                .query_async::<()>(conn)
                .await?;
            let removed = redis::cmd("SREM")
                .arg(keys.limiters())
                .arg(name)
                .query_async::<()>(conn)
                .await;
            super::broken::or_empty(&keys.limiters(), removed)?;
        }
    }
    Ok(())
}

/// The shared rate limiters: name, rate, and the next allowed start if not now (ms, the
/// limiter node's Redis time).
pub async fn shared_limiters(
    conn: &mut crate::transport::connection::Connection,
    keys: &Keys,
) -> Result<Vec<RateStatus>> {
    let read = redis::cmd("SMEMBERS")
        .arg(keys.limiters())
        .query_async(conn)
        .await;
    let mut names: Vec<String> = super::broken::or_empty(&keys.limiters(), read)?;
    names.sort();
    let mut limiters = Vec::with_capacity(names.len());
    for name in names {
        let stored: Option<String> = redis::cmd("GET")
            .arg(keys.limiter_rate(&name))
            .query_async(conn)
            .await?;
        let Some(stored) = stored else { continue };
        let tat: Option<f64> = redis::cmd("GET")
            .arg(keys.limiter_tat(&name))
            .query_async(conn)
            .await?;
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
        let now = secs * 1000 + micros / 1000;
        limiters.push(rate_status(name, &stored, tat, now));
    }
    Ok(limiters)
}

use super::flow_status::rate_status;
pub use super::flow_status::{FlowStatus, Parked, RateStatus, status};

/// Every member of sorted set `key`, lowest score first.
pub async fn zmembers(conn: &mut impl ConnectionLike, key: &str) -> Result<Vec<String>> {
    Ok(redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?)
}

/// Whether `queue` is under flow control: its `flow` hash exists.
pub async fn is_controlled(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<bool> {
    Ok(redis::cmd("EXISTS")
        .arg(keys.flow(queue))
        .query_async(conn)
        .await?)
}
