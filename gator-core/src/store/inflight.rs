//! Crash-safe fetch and settle: every fetch moves a job into its process's in-flight list, and
//! every outcome takes it out in the same atomic step that records the outcome. A job is always
//! in exactly one of: its queue, an in-flight list, the scheduled/retry/dead sets, a chain list.
//!
//! Payloads travel as bytes, exactly as stored: text that is not UTF-8 is a payload a worker
//! cannot read, not a reason for a fetch to fail after it moved a batch into flight.

use crate::error::Result;
use crate::store::dead::DeadCap;
use crate::store::expiry::Verdict;
use crate::store::keys::Keys;
use crate::store::lease::millis;
use crate::store::scripts;
use crate::store::status::Done;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// A job fetched by a process: where it came from and its payload exactly as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The queue it came from.
    pub queue: String,
    /// The process whose in-flight list holds it.
    pub process: String,
    /// The payload as stored: possibly not UTF-8, possibly not JSON (decoding is the caller's
    /// step, and a failure there is the job's outcome, not the fetch's).
    pub raw: Vec<u8>,
    /// Whether `admit.lua` started it (a controlled queue, see [`crate::flow`]): its success
    /// must release its units (`flow_ack.lua`), never be a bare `LREM`.
    pub admitted: bool,
}

/// What one `fetch.lua` call found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Batch {
    /// The jobs moved into flight, oldest first (none if the queue was empty).
    Jobs(Vec<Fetched>),
    /// The process holds no live lease on the queue: take one ([`super::lease::renew`]) and
    /// fetch again. Nothing was moved.
    NoLease,
    /// The queue is controlled ([`crate::flow`]): nothing was moved; fetch with
    /// [`super::admit::admit`].
    Controlled,
}

/// The most jobs one `fetch.lua` call moves: the script pushes in chunks of 1,000 anyway, and a
/// bounded reply keeps one call short for Redis and for this process.
pub const MAX_BATCH: usize = 1000;

/// Takes up to `max` jobs of `queue` into `process`'s in-flight list in one call
/// (`fetch.lua`), oldest first, if `process` holds a live lease on the queue. Never blocks.
pub async fn fetch_batch(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
    max: usize,
) -> Result<Batch> {
    let reply: redis::Value = scripts::FETCH
        .key(keys.queue(queue))
        .key(keys.inflight(queue, process))
        .key(keys.leases(queue))
        .arg(max.clamp(1, MAX_BATCH))
        .arg(process)
        .invoke_async(conn)
        .await?;
    batch_of(reply, queue, process)
}

/// How many jobs from the head of a queue [`fetch_except`] looks at: a call costs a bounded
/// scan, however long the queue.
pub const EXCEPT_LOOKS_AT: usize = 100;

/// [`fetch_batch`] for a process that does not run the jobs named `passed`, which other live
/// workers run from `queue` (`fetch_except.lua`): those stay in the queue, in place, and the
/// others of the first [`EXCEPT_LOOKS_AT`] are taken, oldest first, up to `max`.
pub async fn fetch_except(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    (queue, process): (&str, &str),
    max: usize,
    passed: &[String],
) -> Result<Batch> {
    let mut call = scripts::FETCH_EXCEPT.key(keys.queue(queue));
    call.key(keys.inflight(queue, process))
        .key(keys.leases(queue))
        .arg(max.clamp(1, MAX_BATCH))
        .arg(process)
        .arg(EXCEPT_LOOKS_AT)
        .arg(passed);
    let reply: redis::Value = call.invoke_async(conn).await?;
    batch_of(reply, queue, process)
}

/// A fetch script's reply: the jobs moved, or -1 (no lease), or -2 (controlled).
fn batch_of(reply: redis::Value, queue: &str, process: &str) -> Result<Batch> {
    if let redis::Value::Int(code) = reply {
        return Ok(if code == -2 {
            Batch::Controlled
        } else {
            Batch::NoLease
        });
    }
    let raws: Vec<Vec<u8>> = redis::from_redis_value(reply).map_err(redis::RedisError::from)?;
    Ok(Batch::Jobs(
        raws.into_iter()
            .map(|raw| Fetched {
                queue: queue.to_owned(),
                process: process.to_owned(),
                raw,
                admitted: false,
            })
            .collect(),
    ))
}

/// Waits up to `timeout` for a job of `queue` and takes it into `process`'s in-flight list
/// (BLMOVE). `conn` must be a dedicated connection whose response timeout exceeds `timeout`:
/// a client that gives up early would leave the server to move a job nobody handles (it stays
/// in flight until the process releases it). The caller must hold a lease on `queue` that
/// outlasts the wait, since BLMOVE cannot check one.
pub async fn fetch_blocking(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
    timeout: Duration,
) -> Result<Option<Fetched>> {
    let raw: Option<Vec<u8>> = redis::cmd("BLMOVE")
        .arg(keys.queue(queue))
        .arg(keys.inflight(queue, process))
        .arg("LEFT")
        .arg("RIGHT")
        .arg(timeout.as_secs_f64())
        .query_async(conn)
        .await?;
    // (A controlled queue's list key is the `controlled` marker: BLMOVE fails at once with
    // WRONGTYPE, `Error::is_controlled_queue`, and moves nothing.)
    Ok(raw.map(|raw| Fetched {
        queue: queue.to_owned(),
        process: process.to_owned(),
        raw,
        admitted: false,
    }))
}

/// Settles a success. A success with a hand-off (the outbox record of a chain step with a next
/// step, or of a workflow step: see [`handoff_on_success`]) goes through `ack.lua`, which
/// records it in the same script; any other success is a plain `LREM` ([`ack_and_take`]).
/// Returns false if the job was no longer in flight (recovered meanwhile).
pub async fn ack(
    conn: &mut crate::transport::connection::Connection,
    keys: &Keys,
    job: &Fetched,
    done: &Done<'_>,
    handoff: Option<&str>,
    wait: Option<&crate::transport::replication::ReplicaWait>,
) -> Result<bool> {
    let Some(record) = handoff else {
        if job.admitted {
            return super::admit::ack(conn, keys, job, done).await;
        }
        let record = done.record();
        let acked = ack_and_take(conn, keys, &[Ack::new(job, &record, done)], 0).await?;
        return Ok(acked.removed.first() == Some(&true));
    };
    let mut call = scripts::ACK.key(keys.inflight(&job.queue, &job.process));
    call.key(keys.outbox(&job.queue));
    if let Some(side) = super::aside::key_of(keys, job) {
        call.key(side);
    }
    let settled: i64 = call
        .arg(&job.raw)
        .arg(record)
        .arg(done.tail())
        .arg(super::status::retention_ms(done.retention))
        .invoke_async(conn)
        .await?;
    if settled == 0 {
        return Ok(false);
    }
    // The hand-off is recorded: moving the step now only saves the wait for the next drain.
    if let Err(e) = super::chain::advance(conn, keys, &job.queue, record, wait).await {
        tracing::warn!(queue = %job.queue, error = %e, "could not hand a chain's next step to its queue yet; the next drain of the outbox will");
    }
    Ok(true)
}

/// The outbox record a success of `doc` writes, if it has one: for a workflow step, its
/// [`super::workflow::Report`] (with `result`, the workflow kept `retention` once finished);
/// for a chain step with a next step, its link.
pub fn handoff_on_success(
    doc: &crate::payload::PayloadDocument<'_>,
    result: Option<&str>,
    retention: std::time::Duration,
) -> Option<String> {
    if let Some(link) = doc.workflow() {
        let result =
            result.and_then(|r| serde_json::value::RawValue::from_string(r.to_owned()).ok());
        let report = super::workflow::Report {
            wf: link.id,
            jid: doc.jid().to_owned(),
            end: "done".to_owned(),
            result,
            ret: super::status::retention_ms(retention),
        };
        return Some(report.to_json());
    }
    let link = doc.chain()?;
    link.next_jid.as_ref()?;
    serde_json::to_string(&link).ok()
}

/// The outbox record a death writes: for a workflow step (its dead-set `entry` still carries
/// its link), its [`super::workflow::Report`]; `None` for any other job.
pub fn handoff_on_death(entry: &str, retention: std::time::Duration) -> Option<String> {
    handoff_on_end(entry, "dead", retention)
}

/// The outbox record of a workflow step that ended otherwise than by success (`end`: `dead`
/// or `cancelled`); `None` for any other job.
pub fn handoff_on_end(payload: &str, end: &str, retention: std::time::Duration) -> Option<String> {
    let doc = crate::payload::PayloadDocument::parse(payload.as_bytes()).ok()?;
    let link = doc.workflow()?;
    let report = super::workflow::Report {
        wf: link.id,
        jid: doc.jid().to_owned(),
        end: end.to_owned(),
        result: None,
        ret: super::status::retention_ms(retention),
    };
    Some(report.to_json())
}

fn parse<T: redis::FromRedisValue>(value: Option<redis::Value>) -> Result<T> {
    let parsed = redis::from_redis_value(value.unwrap_or(redis::Value::Nil));
    Ok(parsed.map_err(redis::RedisError::from)?)
}

pub use super::ack::{Ack, Acked, MAX_ACKS, MAX_TAKE, ack_and_take};

/// Settles a failure that runs again `delay` from now on Redis's clock, with the updated
/// payload (`retry.lua`). Returns the due time (ms, Redis time), or `None` if the job was no
/// longer in flight.
pub async fn retry(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    updated: &str,
    delay: Duration,
) -> Result<Option<u64>> {
    let due: u64 = scripts::RETRY
        .key(keys.inflight(&job.queue, &job.process))
        .key(keys.retry(&job.queue))
        .arg(&job.raw)
        .arg(updated)
        .arg(millis(delay))
        .invoke_async(conn)
        .await?;
    Ok((due > 0).then_some(due))
}

/// Puts a job that may not start yet (outside its time windows) into its queue's scheduled set,
/// unchanged, due `delay` from now on Redis's clock, releasing its units (`retry.lua` with the
/// scheduled set: no attempt is counted). `None` if it was no longer in flight.
pub async fn reschedule(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    delay: Duration,
) -> Result<Option<u64>> {
    let due: u64 = scripts::RETRY
        .key(keys.inflight(&job.queue, &job.process))
        .key(keys.scheduled(&job.queue))
        .arg(&job.raw)
        .arg(&job.raw)
        .arg(millis(delay))
        .invoke_async(conn)
        .await?;
    Ok((due > 0).then_some(due))
}

/// What settling a job into the dead set did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Killed {
    /// Whether the job was still in flight (and is now in the dead set).
    pub settled: bool,
    /// Chains whose waiting steps were left without a dead step to resume them, because the
    /// cap trimmed it: `(list queue, chain id)`. Delete their lists with
    /// [`super::chain::forget`].
    pub orphaned_chains: Vec<(String, String)>,
}

/// Settles a job into its queue's dead set as `entry`, trimming the set to `cap` by Redis time
/// (`kill.lua`), and records `handoff` (a workflow step's end, [`handoff_on_death`]) in its
/// queue's outbox in the same script; carry it on with [`super::chain::advance`].
pub async fn kill(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    entry: &str,
    cap: DeadCap,
    handoff: Option<&str>,
) -> Result<Killed> {
    let settled = kill_recording(conn, keys, job, entry, cap, handoff, ["", "", ""]).await?;
    Ok(match settled {
        Verdict::Expired(killed) => killed,
        // Cannot happen: only a deadline to judge by (none here) answers "in time".
        Verdict::InTime { .. } => Killed {
            settled: false,
            orphaned_chains: Vec::new(),
        },
    })
}

/// [`kill`], for a job with a deadline (`store::expiry`) when `expired` is not empty:
/// `[<deadline ms> dead` (its record's tail), the deadline to judge it by on Redis's clock
/// first, its running record's tail if in time`]`.
pub(crate) async fn kill_recording(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    entry: &str,
    cap: DeadCap,
    handoff: Option<&str>,
    [expired_tail, deadline, running]: [&str; 3],
) -> Result<Verdict> {
    let mut invocation = scripts::KILL.key(keys.inflight(&job.queue, &job.process));
    invocation
        .key(keys.dead(&job.queue))
        .key(keys.outbox(&job.queue))
        .arg(&job.raw)
        .arg(entry)
        .arg(cap.max_jobs)
        .arg(millis(cap.max_age))
        .arg(handoff.unwrap_or(""))
        .arg(expired_tail);
    if !deadline.is_empty() {
        // Only a job with a deadline sends them: a plain death's call is as it was.
        invocation.arg(deadline).arg(running);
    }
    let reply: Vec<redis::Value> = invocation.invoke_async(conn).await?;
    let mut values = reply.into_iter();
    let left: i64 = parse(values.next())?;
    if left == -2 {
        return Ok(Verdict::InTime {
            at_ms: parse(values.next())?,
        });
    }
    let mut orphaned_chains = Vec::new();
    while let (Some(queue), Some(id)) = (values.next(), values.next()) {
        orphaned_chains.push((parse(Some(queue))?, parse(Some(id))?));
    }
    Ok(Verdict::Expired(Killed {
        settled: left >= 0,
        orphaned_chains,
    }))
}

/// Puts `job` back at the head of its queue if it is still in its process's in-flight list
/// (`release.lua`); returns whether it was.
pub async fn release(conn: &mut impl ConnectionLike, keys: &Keys, job: &Fetched) -> Result<bool> {
    let released: i64 = scripts::RELEASE
        .key(keys.inflight(&job.queue, &job.process))
        .key(keys.queue(&job.queue))
        .arg(&job.raw)
        .invoke_async(conn)
        .await?;
    Ok(released == 1)
}

/// The payloads `process` holds in flight for `queue`, oldest fetch first, as bytes.
pub async fn list(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
) -> Result<Vec<Vec<u8>>> {
    Ok(redis::cmd("LRANGE")
        .arg(keys.inflight(queue, process))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?)
}
