//! Flow control in Redis (see [`crate::flow`] for the model and `lua/flow_lib.lua` for the
//! keys): the settings, the admit fetch, the ack that releases units, and what a queue's
//! controls look like right now.

use crate::error::Result;
use crate::flow::{FlowSetting, QueueOrdering, RateSpec};
use crate::store::inflight::Fetched;
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
    let ready: Vec<String> = zmembers(conn, &keys.ready(queue)).await?;
    let timed: Vec<String> = zmembers(conn, &keys.timed(queue)).await?;
    let blocked: Vec<String> = redis::cmd("SMEMBERS")
        .arg(keys.blocked(queue))
        .query_async(conn)
        .await?;
    for parking_key in ready.iter().chain(&timed).chain(&blocked) {
        total += redis::cmd("ZCARD")
            .arg(keys.held(queue, parking_key))
            .query_async::<usize>(conn)
            .await?;
    }
    Ok(total)
}

/// The queues known to be controlled.
pub async fn controlled(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<HashSet<String>> {
    Ok(redis::cmd("SMEMBERS")
        .arg(keys.flow_queues())
        .query_async(conn)
        .await?)
}

/// What one `admit.lua` call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// Whether the queue is paused (then nothing was admitted).
    pub paused: bool,
    /// The process held no live lease on the queue: take one and admit again.
    pub no_lease: bool,
    /// Redis time of the decision, ms.
    pub now_ms: u64,
    /// When to look again without a signal.
    pub next: NextLook,
    /// The jobs admitted, now in the process's in-flight list, oldest first.
    pub jobs: Vec<Fetched>,
    /// The queue has time windows and the interval given was missing or stale: its stored
    /// windows, to turn into the interval around `now_ms` ([`WindowInterval::around`]) and
    /// admit again. Nothing was admitted.
    pub windows: Option<String>,
    /// Whether the job given to ack was in flight and is now settled.
    pub acked: bool,
    /// The next job names a shared rate limiter (name, the job's cost): take a start of it
    /// ([`take_shared`]) and admit again with the answer. Nothing was admitted.
    pub needs_shared: Option<(String, u32)>,
}

/// What [`take_shared`] found, for the next [`admit`] call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedStart {
    /// A start of the limiter was taken for this call.
    Taken(String),
    /// The limiter is closed for this many ms (its parking keys wait that long).
    Closed(String, u64),
}

impl SharedStart {
    fn arg(&self) -> String {
        match self {
            SharedStart::Taken(name) => name.clone(),
            SharedStart::Closed(name, ms) => format!("{name}@{ms}"),
        }
    }
}

/// Takes a start (times `cost`) of shared rate limiter `name` on its own slot
/// (`limiter_take.lua`).
pub async fn take_shared(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    name: &str,
    cost: u32,
) -> Result<SharedStart> {
    let wait: u64 = scripts::LIMITER_TAKE
        .key(keys.limiter_rate(name))
        .key(keys.limiter_tat(name))
        .arg(cost.max(1))
        .invoke_async(conn)
        .await?;
    Ok(if wait == 0 {
        SharedStart::Taken(name.to_owned())
    } else {
        SharedStart::Closed(name.to_owned(), wait)
    })
}

/// Sets (or with `None` removes) shared rate limiter `name`: obeyed by the jobs that name it
/// (`#[job(rate = "...")]`, [`crate::PendingJob::rate_limiter`]) on every queue that does not
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

/// A queue's time-window interval as a worker computed it for `admit.lua`: the window that
/// holds or follows a Redis time, in Unix ms, and the stored windows it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowInterval {
    /// The stored `windows` value.
    pub windows: String,
    /// When the window opens.
    pub open: i64,
    /// When it closes.
    pub close: i64,
}

impl WindowInterval {
    /// The interval of stored windows `windows` that holds or follows `now_ms`. Windows that
    /// do not parse (written by hand) count as always open.
    pub fn around(windows: &str, now_ms: u64) -> WindowInterval {
        let now = i64::try_from(now_ms).unwrap_or(i64::MAX);
        let (open, close) = crate::flow::Windows::from_stored(windows)
            .ok()
            .and_then(|w| w.current_or_next(now))
            .unwrap_or((0, i64::MAX));
        WindowInterval {
            windows: windows.to_owned(),
            open,
            close,
        }
    }

    fn arg(&self) -> String {
        format!("{} {} {}", self.open, self.close, self.windows)
    }
}

/// When a worker should call `admit.lua` again for a queue that gave it nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextLook {
    /// When woken by the queue's signal list (a job parked, units released, a resume).
    OnSignal,
    /// At once: the call did part of a longer task (parking a backlog).
    Now,
    /// At this Redis time (ms): a rate limiter's next start.
    At(u64),
}

/// One `admit.lua` call: what to admit, and what the worker knows already.
#[derive(Debug, Clone, Copy)]
pub struct AdmitRequest<'a> {
    /// The controlled queue.
    pub queue: &'a str,
    /// The process whose in-flight list the jobs go to.
    pub process: &'a str,
    /// The most jobs to admit.
    pub max: usize,
    /// The queue's time-window interval as last computed (see [`Admitted::windows`]).
    pub window: Option<&'a WindowInterval>,
    /// A job of the same process and queue that succeeded: settled first, its units released
    /// ([`ack`]'s step), in the same script, so a worker draining the queue makes one call per
    /// job.
    pub ack: Option<&'a Fetched>,
    /// A shared limiter's answer ([`take_shared`]), after [`Admitted::needs_shared`].
    pub shared: Option<&'a SharedStart>,
}

/// Admits up to `request.max` jobs of controlled `request.queue` into its process's in-flight
/// list (`admit.lua`).
pub async fn admit(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    request: &AdmitRequest<'_>,
) -> Result<Admitted> {
    let AdmitRequest {
        queue,
        process,
        max,
        window,
        ack,
        shared,
    } = *request;
    let mut call = scripts::ADMIT.key(keys.inflight(queue, process));
    call.key(keys.leases(queue))
        .key(keys.flow(queue))
        .arg(process)
        .arg(max.clamp(1, super::inflight::MAX_BATCH))
        .arg(window.map(WindowInterval::arg).unwrap_or_default())
        .arg(ack.map(|job| job.raw.as_slice()).unwrap_or_default());
    if let Some(shared) = shared {
        call.arg(shared.arg());
    }
    let reply: Vec<redis::Value> = call.invoke_async(conn).await?;
    let mut values = reply.into_iter();
    let mut number = || -> Result<i64> {
        let value = values.next().unwrap_or(redis::Value::Nil);
        Ok(redis::from_redis_value(value).map_err(redis::RedisError::from)?)
    };
    let (state, now, next, acked) = (number()?, number()?, number()?, number()? == 1);
    if state == 3 {
        let name: String = values
            .next()
            .map(redis::from_redis_value)
            .transpose()
            .map_err(redis::RedisError::from)?
            .unwrap_or_default();
        let cost: u32 = values
            .next()
            .map(redis::from_redis_value)
            .transpose()
            .map_err(redis::RedisError::from)?
            .unwrap_or(1);
        return Ok(Admitted {
            paused: false,
            no_lease: false,
            now_ms: u64::try_from(now).unwrap_or(0),
            next: NextLook::Now,
            jobs: Vec::new(),
            windows: None,
            acked,
            needs_shared: Some((name, cost)),
        });
    }
    if state == 2 {
        let windows: String = values
            .next()
            .map(redis::from_redis_value)
            .transpose()
            .map_err(redis::RedisError::from)?
            .unwrap_or_default();
        return Ok(Admitted {
            paused: false,
            no_lease: false,
            now_ms: u64::try_from(now).unwrap_or(0),
            next: NextLook::Now,
            jobs: Vec::new(),
            windows: Some(windows),
            acked,
            needs_shared: None,
        });
    }
    let jobs = values
        .map(|value| {
            let raw: Vec<u8> = redis::from_redis_value(value).map_err(redis::RedisError::from)?;
            Ok(Fetched {
                queue: queue.to_owned(),
                process: process.to_owned(),
                raw,
                admitted: true,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Admitted {
        paused: state == 1,
        no_lease: state == -1,
        now_ms: u64::try_from(now).unwrap_or(0),
        next: match next {
            n if n < 0 => NextLook::OnSignal,
            0 => NextLook::Now,
            at => NextLook::At(at as u64),
        },
        jobs,
        windows: None,
        acked,
        needs_shared: None,
    })
}

/// Settles the success of an admitted job and releases its units (`flow_ack.lua`); false if
/// it was no longer in flight.
pub async fn ack(conn: &mut impl ConnectionLike, keys: &Keys, job: &Fetched) -> Result<bool> {
    let acked: i64 = scripts::FLOW_ACK
        .key(keys.inflight(&job.queue, &job.process))
        .arg(&job.raw)
        .invoke_async(conn)
        .await?;
    Ok(acked == 1)
}

/// Waits up to `timeout` for a wake-up token of controlled `queue` (BLPOP of its signal list)
/// on a dedicated connection; true if one came.
pub async fn wait_for_signal(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    timeout: Duration,
) -> Result<bool> {
    let popped: Option<(String, String)> = redis::cmd("BLPOP")
        .arg(keys.signal(queue))
        .arg(timeout.as_secs_f64().max(0.001))
        .query_async(conn)
        .await?;
    Ok(popped.is_some())
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
    /// How many jobs wait.
    pub jobs: u64,
    /// `ready`, `blocked` (waiting for its key's share) or `timed` (waiting for its limiter).
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
    let ready: Vec<String> = zmembers(conn, &keys.ready(queue)).await?;
    let timed: Vec<String> = zmembers(conn, &keys.timed(queue)).await?;
    let blocked: Vec<String> = redis::cmd("SMEMBERS")
        .arg(keys.blocked(queue))
        .query_async(conn)
        .await?;
    for (state, parking_keys) in [("ready", ready), ("blocked", blocked), ("timed", timed)] {
        for parking_key in parking_keys {
            let jobs: u64 = redis::cmd("ZCARD")
                .arg(keys.held(queue, &parking_key))
                .query_async(conn)
                .await?;
            let (key, rate) = match parking_key.split_once('\u{1f}') {
                Some((key, rate)) => (key.to_owned(), Some(rate.to_owned())),
                None => (parking_key, None),
            };
            status.parked.push(Parked {
                key,
                rate,
                jobs,
                state: state.to_owned(),
            });
        }
    }
    status
        .parked
        .sort_by(|a, b| (&a.key, &a.rate).cmp(&(&b.key, &b.rate)));
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

async fn zmembers(conn: &mut impl ConnectionLike, key: &str) -> Result<Vec<String>> {
    Ok(redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?)
}
