//! Cancellation in Redis (`cancel.lua`, `cancelled.lua`). A job waiting in its queue's list
//! or its scheduled or retry set is found by jid (the list read from the client in pages of
//! [`PAGE`]; the set through `locate.lua`, from its status record's due time), then removed and recorded cancelled in one script, only if
//! it is still there. A running job, or one parked on a controlled queue, is marked in the
//! queue's cancelling set: every worker reads the sets of its queues each [`CANCEL_POLL`]
//! (one `SMEMBERS` per queue in one pipeline, whatever the number of jobs), stops the jobs it
//! runs that are marked and settles any marked job it fetches without running it.

use crate::error::Result;
use crate::store::fetched::{Fetched, Killed, Verdict};
use crate::store::keys::Keys;
use crate::store::scripts;
use crate::store::sets::SetKind;
use redis::aio::ConnectionLike;
use std::collections::HashSet;
use std::time::Duration;

/// How often a worker reads the cancelling sets of its queues: a running job is stopped at
/// most this long after `Client::cancel` (plus the job's own reaction to `ctx.cancelled()`).
pub const CANCEL_POLL: Duration = Duration::from_millis(500);

/// The list is read in pages of this many payloads when looking for a queued job.
pub const PAGE: isize = 1000;

/// The payload of `jid` in `queue`'s list, if it is there: read page by page from the head
/// (`LRANGE`), so Redis is never blocked for long, at the cost of one round trip per page.
pub async fn find_queued(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
) -> Result<Option<String>> {
    let key = keys.queue(queue);
    let mut start = 0;
    loop {
        let page: Vec<String> = redis::cmd("LRANGE")
            .arg(&key)
            .arg(start)
            .arg(start + PAGE - 1)
            .query_async(conn)
            .await?;
        if let Some(found) = page
            .iter()
            .find(|raw| super::status::jid_of(raw.as_bytes()).as_deref() == Some(jid))
        {
            return Ok(Some(found.clone()));
        }
        if (page.len() as isize) < PAGE {
            return Ok(None);
        }
        start += PAGE;
    }
}

/// A waiting job as found, for [`remove`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its payload exactly as stored.
    pub payload: String,
    /// Its due time, if it may wait in its minute's list rather than the scheduled set
    /// ([`super::later::listed_due`]): where [`remove`] looks when the set does not hold it.
    pub listed_due: Option<u64>,
}

/// `jid` in `queue`'s scheduled or retry set (or a scheduled job's minute's list), if it is
/// there with the score its status record gave (`due_ms`): found by `locate.lua`, in bounded
/// work whatever the set holds.
pub async fn find_in_set(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    queue: &str,
    jid: &str,
    due_ms: u64,
) -> Result<Option<Found>> {
    let found = super::locate::locate(conn, keys, kind, queue, jid, due_ms).await?;
    Ok(found.map(|entry| Found {
        listed_due: super::later::listed_due(&entry),
        payload: entry.raw,
    }))
}

/// Where a waiting job is, for [`remove`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// In the queue's list.
    Queued,
    /// In the scheduled set.
    Scheduled,
    /// In the retry set.
    Retrying,
}

/// Removes `found` from where it waits in `queue` and records it cancelled (kept
/// `retention`), in one script; false if it was no longer there.
pub async fn remove(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
    at: Waiting,
    found: &Found,
    retention: Duration,
) -> Result<bool> {
    let (container, mode) = match at {
        Waiting::Queued => (keys.queue(queue), "list"),
        Waiting::Scheduled => (keys.scheduled(queue), "zset"),
        Waiting::Retrying => (keys.retry(queue), "zset"),
    };
    let mut script = scripts::CANCEL.key(container);
    script
        .key(keys.cancelling(queue))
        .key(keys.job(queue, jid))
        .arg(mode)
        .arg(&found.payload)
        .arg(super::status::retention_ms(retention));
    if let Some(due) = found.listed_due {
        script.arg(due);
    }
    let removed: i64 = script.invoke_async(conn).await?;
    Ok(removed == 1)
}

/// Marks `jid` of `queue` for its worker to stop (`state` `running`) or not to start (`queued`,
/// on a controlled queue, where it is recorded cancelled at once), if its status record is
/// still in `state`; false if it moved on meanwhile.
pub async fn mark(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
    state: &str,
    retention: Duration,
) -> Result<bool> {
    mark_with(conn, keys, queue, jid, state, retention, "").await
}

/// [`mark`], with `report` (a workflow step's end) for the queue's outbox when `state` is
/// `awaiting` (the wait, ended by `reply::end_wait`, is recorded cancelled).
pub async fn mark_with(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
    state: &str,
    retention: Duration,
    report: &str,
) -> Result<bool> {
    let marked: i64 = scripts::CANCEL
        .key(keys.queue(queue))
        .key(keys.cancelling(queue))
        .key(keys.job(queue, jid))
        .key(keys.outbox(queue))
        .arg("mark")
        .arg(jid)
        .arg(super::status::retention_ms(retention))
        .arg(state)
        .arg(report)
        .invoke_async(conn)
        .await?;
    Ok(marked == 1)
}

/// The jids marked in the cancelling sets of `queues`: one `SMEMBERS` each, in one pipeline.
pub async fn marked(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[String],
) -> Result<HashSet<String>> {
    if queues.is_empty() {
        return Ok(HashSet::new());
    }
    let mut pipe = redis::pipe();
    for queue in queues {
        pipe.cmd("SMEMBERS").arg(keys.cancelling(queue));
    }
    let sets: Vec<Vec<String>> = pipe.query_async(conn).await?;
    let marked: Vec<(String, String)> = queues
        .iter()
        .zip(sets)
        .flat_map(|(queue, jids)| jids.into_iter().map(move |jid| (queue.clone(), jid)))
        .collect();
    if !marked.is_empty() {
        prune(conn, keys, &marked).await?;
    }
    Ok(marked.into_iter().map(|(_, jid)| jid).collect())
}

/// Takes out of the cancelling sets the `marked` jobs (`(queue, jid)`) that finished otherwise
/// meanwhile (done or dead: a short job that ended before any worker read the mark), or whose
/// record is gone: nothing is left to stop. Only runs while something is marked.
async fn prune(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    marked: &[(String, String)],
) -> Result<()> {
    use super::status::JobStatus;
    let records = super::status::read_many(conn, keys, marked).await?;
    for ((queue, jid), record) in marked.iter().zip(records) {
        let over = record
            .is_none_or(|r| matches!(r.status, JobStatus::Done { .. } | JobStatus::Dead { .. }));
        if over {
            redis::cmd("SREM")
                .arg(keys.cancelling(queue))
                .arg(jid)
                .query_async::<()>(conn)
                .await?;
        }
    }
    Ok(())
}

/// Settles `job` (jid `jid`), whose cancellation was asked for, recording `state`
/// (`cancelled`, or `discarded` for a job its retry strategy gave up) with `tail` after its
/// time (`cancelled.lua`), with `handoff` (a workflow step's report) in its queue's outbox;
/// false if it was no longer in flight.
pub async fn settle_as(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    jid: &str,
    retention: Duration,
    handoff: Option<&str>,
    recorded: (&str, &str),
) -> Result<bool> {
    let judged = (recorded, ["", ""]);
    let verdict = settle_judged(conn, keys, job, jid, retention, handoff, judged).await?;
    Ok(matches!(
        verdict,
        Verdict::Expired(Killed { settled: true, .. })
    ))
}

/// [`settle_as`], for a job with a deadline (`store::expiry`) when `judge` is not empty:
/// `[the deadline (ms) to judge it by on Redis's clock first, its running record's tail if in
/// time]`.
pub(crate) async fn settle_judged(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    jid: &str,
    retention: Duration,
    handoff: Option<&str>,
    ((state, tail), [deadline, running]): ((&str, &str), [&str; 2]),
) -> Result<Verdict> {
    let mut invocation = scripts::CANCELLED.key(keys.inflight(&job.queue, &job.process));
    invocation
        .key(keys.cancelling(&job.queue))
        .key(keys.outbox(&job.queue))
        .arg(&job.raw)
        .arg(jid)
        .arg(super::status::retention_ms(retention))
        .arg(handoff.unwrap_or(""))
        .arg(state)
        .arg(tail);
    if !deadline.is_empty() {
        // Only a job with a deadline sends them: a plain cancel's call is as it was.
        invocation.arg(deadline).arg(running);
    }
    let reply: redis::Value = invocation.invoke_async(conn).await?;
    if matches!(reply, redis::Value::Array(_)) {
        let (_, at_ms): (i64, u64) =
            redis::from_redis_value(reply).map_err(redis::RedisError::from)?;
        return Ok(Verdict::InTime { at_ms });
    }
    let settled: i64 = redis::from_redis_value(reply).map_err(redis::RedisError::from)?;
    Ok(Verdict::Expired(Killed {
        settled: settled == 1,
        orphaned_chains: Vec::new(),
    }))
}
