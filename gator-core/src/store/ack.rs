//! A success settled the cheapest way Redis has, with the worker's next jobs taken in the same
//! step: one `MULTI` of plain commands on the plain path, `ack_plain.lua` when Redis is at
//! `maxmemory`.

use super::inflight::Fetched;
use super::keys::Keys;
use super::scripts;
use super::status::Done;
use crate::error::{Result, is_wrong_type};
use redis::aio::ConnectionLike;

/// The most jobs [`ack_and_take`] moves with an ack: one `LMOVE` each, so a few.
pub const MAX_TAKE: usize = 8;

/// Settles a success that starts no chain step with plain commands, the cheapest way Redis
/// has: `LREM` of the payload from the in-flight list and, with `take > 0`, up to `take`
/// (at most [`MAX_TAKE`]) `LMOVE`s of the next jobs from the same queue into the same list, in
/// one `MULTI`, so the job leaves the list before its successors enter it. Returns whether the
/// job was still in flight, and the jobs taken, oldest first.
///
/// No lease is checked: the caller holds one (it fetched this job under it). If the job was no
/// longer in flight, this process was presumed dead and recovered: renew its lease at once, so
/// that the list holding the jobs just taken is indexed again.
pub async fn ack_and_take(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    done: &Done<'_>,
    take: usize,
) -> Result<(bool, Vec<Fetched>)> {
    let take = take.min(MAX_TAKE);
    let pipe = ack_pipeline(keys, job, done, take);
    let replies: Vec<redis::Value> = match pipe.query_async(conn).await {
        Ok(replies) => replies,
        // At maxmemory Redis aborts the whole MULTI for its SET: settle with the script,
        // which may still write.
        Err(e) if is_out_of_memory(&e) => {
            return ack_at_maxmemory(conn, keys, job, done, take).await;
        }
        // The queue became controlled (its list key is the `controlled` marker): the LREM
        // ran in the MULTI, the LMOVEs found no list. Nothing taken; the worker learns of the
        // control at its next fetch.
        Err(e) if is_wrong_type(&e) => return Ok((true, Vec::new())),
        Err(e) => return Err(e.into()),
    };
    let (removed, taken) = ack_replies(replies)?;
    let jobs = taken
        .into_iter()
        .flatten()
        .map(|raw| Fetched {
            queue: job.queue.clone(),
            process: job.process.clone(),
            raw,
            admitted: false,
        })
        .collect();
    Ok((removed == 1, jobs))
}

/// The `MULTI` of [`ack_and_take`]: `LREM` of the job, its `done` record (and the `HDEL` of
/// its queued mark), `take` `LMOVE`s.
fn ack_pipeline(keys: &Keys, job: &Fetched, done: &Done<'_>, take: usize) -> redis::Pipeline {
    let inflight = keys.inflight(&job.queue, &job.process);
    let queue = keys.queue(&job.queue);
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("LREM")
        .arg(&inflight)
        .arg(1)
        .arg(&job.raw);
    // The status record, `done` (a job without a jid has none). Written even if the job was
    // no longer in flight: its recovered copy writes `running` and its own outcome after.
    if let Some(jid) = super::status::jid_of(&job.raw) {
        pipe.cmd("SET")
            .arg(keys.job(&job.queue, &jid))
            .arg(done.record())
            .arg("PX")
            .arg(super::status::retention_ms(done.retention))
            .ignore();
        // Its queued mark, if the plain dispatch wrote one, is done with (see `wire::jid`).
        if let Some((bucket, field)) = keys.queued_mark(&job.queue, &jid) {
            pipe.cmd("HDEL").arg(bucket).arg(field).ignore();
        }
        // And the record counts against the queue's bound (`store::finished`).
        pipe.cmd("LPUSH")
            .arg(keys.finished(&job.queue))
            .arg(&jid)
            .ignore();
    }
    for _ in 0..take {
        pipe.cmd("LMOVE")
            .arg(&queue)
            .arg(&inflight)
            .arg("LEFT")
            .arg("RIGHT");
    }
    pipe
}

/// Whether the `LREM` removed the job, and each `LMOVE`'s job (`None`: nothing left, or the
/// queue became controlled).
fn ack_replies(mut replies: Vec<redis::Value>) -> Result<(i64, Vec<Option<Vec<u8>>>)> {
    let taken = replies.split_off(1.min(replies.len()));
    let removed = parse(replies.pop())?;
    let taken = taken
        .into_iter()
        .map(|raw| match raw {
            redis::Value::ServerError(e) if e.code() == "WRONGTYPE" => Ok(None),
            raw => parse(Some(raw)),
        })
        .collect::<Result<Vec<Option<Vec<u8>>>>>()?;
    Ok((removed, taken))
}

/// Whether Redis refused a command (or a `MULTI`) because it is at `maxmemory`.
fn is_out_of_memory(error: &redis::RedisError) -> bool {
    crate::error::has_server_code(error, "OOM")
}

/// [`ack_and_take`] through `ack_plain.lua`, for a Redis at `maxmemory` (its `allow-oom` flag
/// lets it settle where the `MULTI` was refused).
async fn ack_at_maxmemory(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    done: &Done<'_>,
    take: usize,
) -> Result<(bool, Vec<Fetched>)> {
    let reply: Vec<redis::Value> = scripts::ACK_PLAIN
        .key(keys.inflight(&job.queue, &job.process))
        .key(keys.queue(&job.queue))
        .arg(&job.raw)
        .arg(done.record())
        .arg(super::status::retention_ms(done.retention))
        .arg(take)
        .invoke_async(conn)
        .await?;
    let mut values = reply.into_iter();
    let removed: i64 = parse(values.next())?;
    let jobs = values
        .map(|raw| {
            Ok(Fetched {
                queue: job.queue.clone(),
                process: job.process.clone(),
                raw: parse(Some(raw))?,
                admitted: false,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((removed == 1, jobs))
}

fn parse<T: redis::FromRedisValue>(value: Option<redis::Value>) -> Result<T> {
    let parsed = redis::from_redis_value(value.unwrap_or(redis::Value::Nil));
    Ok(parsed.map_err(redis::RedisError::from)?)
}
