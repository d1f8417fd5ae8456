//! Flow control in Redis (see [`crate::flow`] for the model and `lua/flow_lib.lua` for the
//! keys): the settings, shared limiters, and what a queue's controls look like right now. The
//! fetch side (admit, ack, the signal wait) is [`super::admit`].

use crate::error::Result;
use crate::flow::{FlowSetting, QueueOrdering, RateSpec};
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

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

/// Records `queues` in the global set of controlled queues (idempotent).
pub async fn register(conn: &mut impl ConnectionLike, keys: &Keys, queues: &[&str]) -> Result<()> {
    redis::cmd("SADD")
        .arg(keys.flow_queues())
        .arg(queues)
        .query_async::<()>(conn)
        .await?;
    Ok(())
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

/// The queues known to be controlled.
pub async fn controlled(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<HashSet<String>> {
    Ok(redis::cmd("SMEMBERS")
        .arg(keys.flow_queues())
        .query_async(conn)
        .await?)
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
            redis::cmd("SADD")
                .arg(keys.limiters())
                .arg(name)
                .query_async::<()>(conn)
                .await?;
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
            redis::cmd("SREM")
                .arg(keys.limiters())
                .arg(name)
                .query_async::<()>(conn)
                .await?;
        }
    }
    Ok(())
}

/// The shared rate limiters: name, rate, and the next allowed start if not now (ms, the
/// limiter node's Redis time).
pub async fn shared_limiters(
    conn: &mut crate::connection::Connection,
    keys: &Keys,
) -> Result<Vec<RateStatus>> {
    let mut names: Vec<String> = redis::cmd("SMEMBERS")
        .arg(keys.limiters())
        .query_async(conn)
        .await?;
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

/// A limiter's status from its stored rate and TAT, at Redis time `now` (ms).
fn rate_status(name: String, stored: &str, tat: Option<f64>, now: u64) -> RateStatus {
    let spec = RateSpec::from_stored(stored);
    let next_allowed_ms = match (spec, tat) {
        (Some(spec), Some(tat)) => {
            let step = spec.per.as_millis() as f64 / f64::from(spec.count);
            let at = tat - f64::from(spec.burst.saturating_sub(1)) * step;
            (at > now as f64).then_some(at.ceil() as u64)
        }
        _ => None,
    };
    RateStatus {
        name,
        rate: spec.map_or_else(|| stored.to_owned(), |s| s.to_string()),
        next_allowed_ms,
    }
}

/// A queue's flow controls as they stand: what `gator-worker queue show` prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlowStatus {
    /// The queue.
    pub queue: String,
    /// Whether the queue is controlled at all (a plain queue has nothing else to show).
    pub controlled: bool,
    /// Whether it is paused.
    pub paused: bool,
    /// The concurrency limit in units, if any.
    pub limit: Option<u32>,
    /// Units in use over the fleet.
    pub units_in_use: u64,
    /// Units in use per limit key (the empty key is jobs without one).
    pub units_by_key: BTreeMap<String, u64>,
    /// Shares in percent per limit key.
    pub shares: BTreeMap<String, u8>,
    /// The share of unlisted keys, if set.
    pub default_share: Option<u8>,
    /// Jobs parked per limit key, with the state of each parking key.
    pub parked: Vec<Parked>,
    /// Critical jobs waiting.
    pub critical_waiting: u64,
    /// Jobs moved aside when the queue became controlled, not parked yet.
    pub backlog: u64,
    /// The rate limiters: the queue's own (`name` empty) and named ones.
    pub rates: Vec<RateStatus>,
    /// Aging interval, if set.
    #[serde(with = "optional_ms")]
    pub aging: Option<Duration>,
    /// How jobs are ordered.
    pub order: String,
    /// The queue's time windows (`05:00-07:00,22:00-23:00 Europe/Berlin`), if any.
    pub windows: Option<String>,
}

/// Parked jobs of one parking key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parked {
    /// The limit key (empty for jobs without one).
    pub key: String,
    /// The rate limiter the jobs name, if any.
    pub rate: Option<String>,
    /// The no-overlap key the jobs share, if any ([`crate::flow::overlap`]).
    pub overlap: Option<String>,
    /// How many jobs wait.
    pub jobs: u64,
    /// `ready`, `blocked` (waiting for its key's share), `timed` (waiting for its limiter) or
    /// `overlap` (waiting for a running job of its overlap key to settle).
    pub state: String,
}

/// One rate limiter's setting and its next allowed start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RateStatus {
    /// Its name; empty for the queue's own.
    pub name: String,
    /// Its rate, as `100/1s`.
    pub rate: String,
    /// The earliest time (ms since the epoch, Redis time) a job may start, if not now.
    pub next_allowed_ms: Option<u64>,
}

mod optional_ms {
    pub fn serialize<S: serde::Serializer>(
        value: &Option<std::time::Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }
}

/// Reads `queue`'s flow controls.
pub async fn status(
    conn: &mut crate::connection::Connection,
    keys: &Keys,
    queue: &str,
) -> Result<FlowStatus> {
    let flow: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg(keys.flow(queue))
        .query_async(conn)
        .await?;
    let mut status = FlowStatus {
        queue: queue.to_owned(),
        controlled: !flow.is_empty(),
        order: QueueOrdering::Priority.to_string(),
        ..FlowStatus::default()
    };
    if flow.is_empty() {
        return Ok(status);
    }
    // On a cluster TIME goes to any node: the next allowed times shown may be off by the
    // nodes' clock difference (they are for people, not decisions).
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
    let now = secs * 1000 + micros / 1000;
    let mut rate_names = Vec::new();
    for (field, value) in &flow {
        match field.as_str() {
            "paused" => status.paused = value == "1",
            "limit" => status.limit = value.parse().ok(),
            "share_default" => status.default_share = value.parse().ok(),
            "aging" => status.aging = value.parse().ok().map(Duration::from_millis),
            "order" if value == "due" => status.order = QueueOrdering::Due.to_string(),
            "rate" => rate_names.push((String::new(), value.clone())),
            "windows" => status.windows = Some(value.clone()),
            _ => {
                if let Some(key) = field.strip_prefix("share:") {
                    if let Ok(p) = value.parse() {
                        status.shares.insert(key.to_owned(), p);
                    }
                } else if let Some(name) = field.strip_prefix("rate:") {
                    rate_names.push((name.to_owned(), value.clone()));
                }
            }
        }
    }
    for (name, stored) in rate_names {
        let tat: Option<f64> = redis::cmd("GET")
            .arg(keys.tat(queue, &name))
            .query_async(conn)
            .await?;
        status.rates.push(rate_status(name, &stored, tat, now));
    }
    let used: BTreeMap<String, i64> = redis::cmd("HGETALL")
        .arg(keys.used(queue))
        .query_async(conn)
        .await?;
    for (field, units) in used {
        let units = u64::try_from(units).unwrap_or(0);
        if field == "!total" {
            status.units_in_use = units;
        } else if let Some(key) = field.strip_prefix("k:") {
            status.units_by_key.insert(key.to_owned(), units);
        }
    }
    let ParkingKeys {
        ready,
        timed,
        blocked,
    } = parking_keys(conn, keys, queue).await?;
    // The overlap keys held now; the parking keys waiting for them.
    let held: Vec<String> = redis::cmd("HKEYS")
        .arg(keys.overlap(queue))
        .query_async(conn)
        .await?;
    let mut waiting = Vec::new();
    for overlap in held {
        let parking_keys: Vec<String> = redis::cmd("SMEMBERS")
            .arg(keys.overlap_wait(queue, &overlap))
            .query_async(conn)
            .await?;
        waiting.extend(parking_keys);
    }
    for (state, parking_keys) in [
        ("ready", ready),
        ("blocked", blocked),
        ("timed", timed),
        ("overlap", waiting),
    ] {
        for parking_key in parking_keys {
            let jobs: u64 = redis::cmd("ZCARD")
                .arg(keys.held(queue, &parking_key))
                .query_async(conn)
                .await?;
            let (rest, overlap) = match parking_key.split_once('\u{1e}') {
                Some((rest, overlap)) => (rest, Some(overlap.to_owned())),
                None => (parking_key.as_str(), None),
            };
            let (key, rate) = match rest.split_once('\u{1f}') {
                Some((key, rate)) => (key.to_owned(), Some(rate.to_owned())),
                None => (rest.to_owned(), None),
            };
            status.parked.push(Parked {
                key,
                rate,
                overlap,
                jobs,
                state: state.to_owned(),
            });
        }
    }
    status
        .parked
        .sort_by(|a, b| (&a.key, &a.rate, &a.overlap).cmp(&(&b.key, &b.rate, &b.overlap)));
    status.critical_waiting = redis::cmd("ZCARD")
        .arg(keys.critical(queue))
        .query_async(conn)
        .await?;
    status.backlog = redis::cmd("LLEN")
        .arg(keys.backlog(queue))
        .query_async(conn)
        .await?;
    Ok(status)
}

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
