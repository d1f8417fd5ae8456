//! The fetch side of flow control (see [`crate::flow`] for the model): `admit.lua`, which
//! settles a process's successes and starts the parked jobs the controls allow, in batches; the
//! lone ack of an admitted job; shared limiters' starts; and the wait for a queue's signal.

use crate::error::Result;
use crate::store::fetched::{Fetched, MAX_BATCH};
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::Value;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// The most successes one `admit.lua` call settles: Lua unpacks them onto its stack, and a
/// bounded call keeps Redis responsive. A worker sends more in the next call.
pub const MAX_ACKS: usize = 500;

/// One `admit.lua` call: what to settle, what to admit, and what the worker knows already.
#[derive(Debug, Clone, Copy)]
pub struct AdmitRequest<'a> {
    /// The controlled queue.
    pub queue: &'a str,
    /// The process whose in-flight list the jobs go to.
    pub process: &'a str,
    /// The most jobs to admit; 0 to only settle `acks`.
    pub max: usize,
    /// Up to how many more to admit where starting a job early changes no decision (no time
    /// windows, no rate limiter closer than 1 ms per spare, under a limit at most half of it
    /// in use): jobs a worker keeps taken ahead.
    pub spare: usize,
    /// The queue's time-window interval as last computed (see [`Admitted::windows`]).
    pub window: Option<&'a WindowInterval>,
    /// Jobs of the same process and queue that succeeded (at most [`MAX_ACKS`]): settled first,
    /// their units released (`ack`'s step), in the same script, so a worker draining the
    /// queue makes one call for the successes and the fetches of all its processors.
    /// Each with the tail of its status record ([`super::status::Done::tail`]: attempts and
    /// result).
    pub acks: &'a [(&'a Fetched, &'a str)],
    /// How long the successes' status records are kept.
    pub retention: Duration,
    /// A shared limiter's answer (`take_shared`), after [`Admitted::needs_shared`].
    pub shared: Option<&'a SharedStart>,
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
    /// For each job of [`AdmitRequest::acks`], in order: whether it was in flight and is now
    /// settled (whatever else the call did).
    pub acked: Vec<bool>,
    /// The next job names a shared rate limiter (name, the job's cost): take a start of it
    /// (`take_shared`) and admit again with the answer. Nothing was admitted.
    pub needs_shared: Option<(String, u32)>,
}

/// When a worker should call `admit.lua` again for a queue that gave it nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextLook {
    /// When woken by the queue's signal list (a job parked, units released, a resume).
    OnSignal,
    /// At once: the call did part of a longer task (parking a backlog), or a job waits for a
    /// shared limiter's start.
    Now,
    /// At this Redis time (ms): a rate limiter's next start.
    At(u64),
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

/// What `take_shared` found, for the next `admit` call.
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

/// Settles `request.acks`, then admits up to `request.max` jobs of controlled `request.queue`
/// into its process's in-flight list (`admit.lua`).
pub async fn admit(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    request: &AdmitRequest<'_>,
) -> Result<Admitted> {
    let AdmitRequest {
        queue,
        process,
        max,
        spare,
        window,
        acks,
        retention,
        shared,
    } = *request;
    let mut call = scripts::ADMIT.key(keys.inflight(queue, process));
    call.key(keys.leases(queue))
        .key(keys.flow(queue))
        .arg(process)
        .arg(format!(
            "{} {}",
            max.min(MAX_BATCH),
            spare.min(MAX_BATCH - max.min(MAX_BATCH))
        ))
        .arg(window.map(WindowInterval::arg).unwrap_or_default())
        .arg(shared.map(SharedStart::arg).unwrap_or_default())
        .arg(super::status::retention_ms(retention));
    for (job, tail) in acks.iter().take(MAX_ACKS) {
        call.arg(job.raw.as_slice());
        if crate::payload::aside::marked(&job.raw) {
            call.arg(format!("~{tail}"));
        } else {
            call.arg(*tail);
        }
    }
    let reply: Vec<Value> = call.invoke_async(conn).await?;
    admitted(reply, queue, process)
}

/// What `admit.lua` answered: its state, Redis's clock, when to look next, the acks that
/// landed, then the jobs (or the windows, or the shared limiter it needs).
fn admitted(reply: Vec<Value>, queue: &str, process: &str) -> Result<Admitted> {
    let mut values = reply.into_iter();
    let state: i64 = next_value(&mut values)?.unwrap_or(0);
    let now: i64 = next_value(&mut values)?.unwrap_or(0);
    let next: i64 = next_value(&mut values)?.unwrap_or(-1);
    let acked: String = next_value(&mut values)?.unwrap_or_default();
    let mut admitted = Admitted {
        paused: state == 1,
        no_lease: state == -1,
        now_ms: u64::try_from(now).unwrap_or(0),
        next: match next {
            n if n < 0 => NextLook::OnSignal,
            0 => NextLook::Now,
            at => NextLook::At(at as u64),
        },
        jobs: Vec::new(),
        windows: None,
        acked: acked.bytes().map(|b| b == b'1').collect(),
        needs_shared: None,
    };
    match state {
        2 => {
            admitted.windows = Some(next_value(&mut values)?.unwrap_or_default());
            admitted.next = NextLook::Now;
        }
        3 => {
            let name: String = next_value(&mut values)?.unwrap_or_default();
            let cost: u32 = next_value(&mut values)?.unwrap_or(1);
            admitted.needs_shared = Some((name, cost));
            admitted.next = NextLook::Now;
        }
        _ => admitted.jobs = fetched(values, queue, process)?,
    }
    Ok(admitted)
}

/// The jobs an admission moved into `process`'s in-flight list of `queue`.
fn fetched(
    values: impl Iterator<Item = Value>,
    queue: &str,
    process: &str,
) -> Result<Vec<Fetched>> {
    values
        .map(|value| {
            let raw: Vec<u8> = redis::from_redis_value(value).map_err(redis::RedisError::from)?;
            Ok(Fetched {
                queue: queue.to_owned(),
                process: process.to_owned(),
                raw,
                admitted: true,
            })
        })
        .collect()
}

/// The next element of a script's reply, converted; `None` past its end.
fn next_value<T: redis::FromRedisValue>(
    values: &mut impl Iterator<Item = Value>,
) -> Result<Option<T>> {
    values
        .next()
        .map(redis::from_redis_value)
        .transpose()
        .map_err(|e| redis::RedisError::from(e).into())
}

/// Settles the success of an admitted job and releases its units (`flow_ack.lua`); false if
/// it was no longer in flight.
pub async fn ack(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    done: &super::status::Done<'_>,
) -> Result<bool> {
    let mut call = scripts::FLOW_ACK.key(keys.inflight(&job.queue, &job.process));
    if let Some(side) = super::aside::key_of(keys, job) {
        call.key(side);
    }
    let acked: i64 = call
        .arg(&job.raw)
        .arg(done.tail())
        .arg(super::status::retention_ms(done.retention))
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
