//! Crash-safe fetch and settle: every fetch moves a job into its process's in-flight list, and
//! every outcome takes it out in the same atomic step that records the outcome. A job is always
//! in exactly one of: its queue, an in-flight list, the scheduled/retry/dead sets, a chain list.
//!
//! Payloads travel as bytes, exactly as stored: text that is not UTF-8 is a payload a worker
//! cannot read, not a reason for a fetch to fail after it moved a batch into flight.

use crate::error::Result;
use crate::store::ack::{Ack, ack_and_take};
use crate::store::dead::DeadCap;
use crate::store::fetched::{Batch, Fetched, Killed, MAX_BATCH, Verdict};
use crate::store::keys::Keys;
use crate::store::lease::millis;
use crate::store::scripts;
use crate::store::status::Done;
use redis::aio::ConnectionLike;
use std::time::Duration;

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

/// The most jobs [`fetch_leased`] takes with plain `LMOVE`s; a larger fetch is one
/// `fetch.lua` call, whose cost its batch shares.
pub const LEASED_TAKE: usize = 16;

/// Takes up to `max` (at most [`LEASED_TAKE`]) jobs of `queue` into `process`'s in-flight list
/// with plain `LMOVE`s, in one round trip, for a process whose lease on the queue surely holds
/// (the caller's word, measured as for the blocking `BLMOVE`, [`fetch_blocking`]): no script,
/// whose call costs Redis far more than the move (about 13 µs against 0.4 for one job, by
/// `redis-benchmark`), and which a worker of many queues paid for nearly every job. A
/// controlled queue (its key the `controlled` marker) fails every `LMOVE` with WRONGTYPE and
/// moves nothing: then `fetch.lua` answers, as it does of any other key of the wrong type. So
/// does it for a Redis at `maxmemory`, which refuses an `LMOVE` (a write that may grow) and
/// lets the script, flagged `allow-oom`, move jobs: workers must keep draining it.
pub async fn fetch_leased(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
    max: usize,
) -> Result<Batch> {
    let (from, to) = (keys.queue(queue), keys.inflight(queue, process));
    let mut pipe = redis::pipe();
    for _ in 0..max.clamp(1, LEASED_TAKE) {
        pipe.cmd("LMOVE")
            .arg(&from)
            .arg(&to)
            .arg("LEFT")
            .arg("RIGHT");
    }
    let raws: Vec<Option<Vec<u8>>> = match pipe.query_async(conn).await {
        Ok(raws) => raws,
        Err(e) if crate::error::is_wrong_type(&e) || super::ack::is_out_of_memory(&e) => {
            return fetch_batch(conn, keys, queue, process, max).await;
        }
        Err(e) => return Err(e.into()),
    };
    Ok(jobs_of(raws.into_iter().flatten(), queue, process))
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
    Ok(jobs_of(raws, queue, process))
}

/// The payloads `raws` moved into `process`'s in-flight list of `queue`, as a batch.
fn jobs_of(raws: impl IntoIterator<Item = Vec<u8>>, queue: &str, process: &str) -> Batch {
    Batch::Jobs(
        raws.into_iter()
            .map(|raw| Fetched {
                queue: queue.to_owned(),
                process: process.to_owned(),
                raw,
                admitted: false,
            })
            .collect(),
    )
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
/// step, or of a workflow step: see `handoff::on_success`) goes through `ack.lua`, which
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
    if let Err(e) = super::handoff::advance(conn, keys, &job.queue, record, wait).await {
        tracing::warn!(queue = %job.queue, error = %e, "could not hand a chain's next step to its queue yet; the next drain of the outbox will");
    }
    Ok(true)
}

fn parse<T: redis::FromRedisValue>(value: Option<redis::Value>) -> Result<T> {
    let parsed = redis::from_redis_value(value.unwrap_or(redis::Value::Nil));
    Ok(parsed.map_err(redis::RedisError::from)?)
}

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

/// Settles a job into its queue's dead set as `entry`, trimming the set to `cap` by Redis time
/// (`kill.lua`), and records `handoff` (a workflow step's end, `handoff::on_death`) in its
/// queue's outbox in the same script; carry it on with `handoff::advance`.
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
