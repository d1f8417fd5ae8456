//! Successes settled the cheapest way Redis has, with the worker's next jobs taken in the same
//! step: one `MULTI` of plain commands for every success that gathered on one in-flight list,
//! `ack_plain.lua` when Redis is at `maxmemory`.

use super::fetched::Fetched;
use super::keys::Keys;
use super::scripts;
use super::status::Done;
use crate::error::{Result, is_wrong_type};
use redis::aio::ConnectionLike;

/// The most jobs `ack_and_take` moves in one call: one `LMOVE` each, one per processor
/// that waits for its next job.
pub const MAX_TAKE: usize = 128;

/// The most successes `ack_and_take` settles in one call.
pub const MAX_ACKS: usize = 128;

/// One success to settle with plain commands: the job as fetched, and its status record.
#[derive(Debug, Clone, Copy)]
pub struct Ack<'a> {
    /// The job, exactly as fetched.
    pub job: &'a Fetched,
    /// Its status record, `done <at> <attempts> <result>` ([`Done::record`]).
    pub record: &'a str,
    /// How long the record (and the result) is kept.
    pub retention: std::time::Duration,
    /// Whether the job's key may hold a record to delete ([`Done::keyed`]).
    pub keyed: bool,
}

impl<'a> Ack<'a> {
    /// The success of `job`, recording `record` ([`Done::record`]) for `done.retention`.
    pub fn new(job: &'a Fetched, record: &'a str, done: &Done<'_>) -> Ack<'a> {
        Ack {
            job,
            record,
            retention: done.retention,
            keyed: done.keyed,
        }
    }
}

/// What one `ack_and_take` call did.
#[derive(Debug, Default)]
pub struct Acked {
    /// For each success, in order, whether its job was still in flight.
    pub removed: Vec<bool>,
    /// The jobs taken, oldest first.
    pub taken: Vec<Fetched>,
}

/// Settles successes that start no chain step with plain commands, the cheapest way Redis
/// has (a group commit: the successes of one in-flight list that finish together): an
/// `LREM` of each payload from the in-flight list and, with `take > 0`, up to `take` (at most
/// [`MAX_TAKE`]) `LMOVE`s of the next jobs from the same queue into the same list, in one
/// `MULTI`, so the jobs leave the list before their successors enter it. Every success must be
/// of the same queue and process (one in-flight list, one hash tag); at most [`MAX_ACKS`].
///
/// No lease is checked: the caller holds one (it fetched these jobs under it). If a job was no
/// longer in flight, this process was presumed dead and recovered: renew its lease at once, so
/// that the list holding the jobs just taken is indexed again.
pub async fn ack_and_take(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    acks: &[Ack<'_>],
    take: usize,
) -> Result<Acked> {
    let Some(first) = acks.first() else {
        return Ok(Acked::default());
    };
    debug_assert!(
        acks.len() <= MAX_ACKS,
        "at most MAX_ACKS successes per call"
    );
    let take = take.min(MAX_TAKE);
    // A job stored aside loses its side key only if it was still in flight, which a MULTI
    // cannot test: such a batch settles by script (`payload::aside`; never on the plain path).
    // Every call of the script is boxed: its future would make every success's settle larger,
    // and each success copies it along.
    if acks
        .iter()
        .any(|ack| crate::payload::aside::marked(&ack.job.raw))
    {
        return Box::pin(ack_by_script(conn, keys, acks, take)).await;
    }
    let pipe = ack_pipeline(keys, acks, take);
    let replies: Vec<redis::Value> = match pipe.query_async(conn).await {
        Ok(replies) => replies,
        // At maxmemory Redis aborts the whole MULTI for its SETs: settle with the script,
        // which may still write.
        Err(e) if is_out_of_memory(&e) => {
            return Box::pin(ack_by_script(conn, keys, acks, take)).await;
        }
        // The queue became controlled (its list key is the `controlled` marker): the LREMs
        // ran in the MULTI, the LMOVEs found no list. Nothing taken; the worker learns of the
        // control at its next fetch.
        Err(e) if is_wrong_type(&e) => {
            return Ok(Acked {
                removed: vec![true; acks.len()],
                taken: Vec::new(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let (removed, taken) = ack_replies(replies, acks.len())?;
    let taken = taken
        .into_iter()
        .flatten()
        .map(|raw| taken_job(first.job, raw))
        .collect();
    Ok(Acked { removed, taken })
}

/// A job taken into the in-flight list `beside` is in.
fn taken_job(beside: &Fetched, raw: Vec<u8>) -> Fetched {
    Fetched {
        queue: beside.queue.clone(),
        process: beside.process.clone(),
        raw,
        admitted: false,
    }
}

/// The `MULTI` of [`ack_and_take`]: an `LREM` of each job, its `done` record (a field of its
/// bucket, one `HSET` per bucket for all of them, and a `DEL` of its key only if it may hold
/// one, or a `SET` for a jid that names no bucket), one `LPUSH` of every jid to the finished
/// list, `take` `LMOVE`s.
fn ack_pipeline(keys: &Keys, acks: &[Ack<'_>], take: usize) -> redis::Pipeline {
    let first = acks[0].job;
    let inflight = keys.inflight(&first.queue, &first.process);
    // Each command sized before its arguments go in: growing them an argument at a time cost
    // a dozen allocations a success.
    let mut pipe = redis::Pipeline::with_capacity(2 * acks.len() + take + 1);
    pipe.atomic();
    for ack in acks {
        pipe.add_command(sized("LREM", &[inflight.as_bytes(), b"1", &ack.job.raw]));
    }
    // The status record, `done` (a job without a jid has none). Written even if the job was
    // no longer in flight: its recovered copy writes `running` and its own outcome after.
    let jids: Vec<_> = acks
        .iter()
        .map(|ack| super::status::jid_in(&ack.job.raw))
        .collect();
    // A jid that names a bucket (`wire::jid`) has its record there, where its queued mark
    // was: a field rewritten, where a key with an expiry cost Redis three times as much.
    let marks: Vec<_> = jids
        .iter()
        .map(|jid| keys.queued_mark(&first.queue, jid.as_deref()?))
        .collect();
    let mut finished = redis::cmd("LPUSH");
    finished.arg(keys.finished(&first.queue));
    for ((ack, jid), mark) in acks.iter().zip(&jids).zip(&marks) {
        let Some(jid) = jid else { continue };
        match mark {
            // Such a jid has a key record in flight only if this attempt wrote one (`keyed`):
            // every `queued` record of it is its mark (the prelude's `set_status`), and every
            // other state takes it out of flight. A reader looks at the key first, so that
            // one goes.
            Some(_) if ack.keyed => {
                pipe.cmd("DEL").arg(keys.job(&first.queue, jid)).ignore();
            }
            Some(_) => {}
            None => {
                let px = super::status::retention_ms(ack.retention);
                pipe.cmd("SET")
                    .arg(keys.job(&first.queue, jid))
                    .arg(ack.record)
                    .arg("PX")
                    .arg(px)
                    .ignore();
            }
        }
        finished.arg(&**jid);
    }
    for hset in by_bucket(acks, &marks) {
        pipe.add_command(hset).ignore();
    }
    // Every record counts against the queue's bound (`store::finished`).
    if finished.args_iter().len() > 1 {
        pipe.add_command(finished).ignore();
    }
    let queue = keys.queue(&first.queue);
    for _ in 0..take {
        let lmove = [queue.as_bytes(), inflight.as_bytes(), b"LEFT", b"RIGHT"];
        pipe.add_command(sized("LMOVE", &lmove));
    }
    pipe
}

/// One `HSET` per bucket of `marks` (each ack's bucket and field, if its jid names one), with
/// each of its acks' records: one `HSET` of many fields costs Redis less than one a field, and
/// the jids a producer minted together share a bucket (`wire::jid::BUCKET_SIZE`). Buckets are
/// few: each is looked for among the ones before it.
fn by_bucket<'m>(
    acks: &'m [Ack<'_>],
    marks: &'m [Option<(String, &str)>],
) -> impl Iterator<Item = redis::Cmd> + 'm {
    marks.iter().enumerate().filter_map(move |(i, mark)| {
        let (bucket, _) = mark.as_ref()?;
        let same = |m: &Option<(String, &str)>| m.as_ref().is_some_and(|(b, _)| b == bucket);
        if marks[..i].iter().any(same) {
            return None; // its bucket's HSET is written already
        }
        let mut hset = redis::Cmd::with_capacity(2 * (marks.len() - i) + 2, 64 * (marks.len() - i));
        hset.arg("HSET").arg(bucket);
        for (ack, mark) in acks[i..].iter().zip(&marks[i..]) {
            if let Some((_, field)) = mark.as_ref().filter(|_| same(mark)) {
                hset.arg(*field).arg(ack.record);
            }
        }
        Some(hset)
    })
}

/// Command `name` with `args`, its buffers allocated once at their final size.
fn sized(name: &str, args: &[&[u8]]) -> redis::Cmd {
    let bytes = name.len() + args.iter().map(|a| a.len()).sum::<usize>();
    let mut cmd = redis::Cmd::with_capacity(args.len() + 1, bytes);
    cmd.arg(name);
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// Each `LMOVE`'s job, if it found one.
type Taken = Vec<Option<Vec<u8>>>;

/// Whether each `LREM` removed its job, and each `LMOVE`'s job (`None`: nothing left, or the
/// queue became controlled).
fn ack_replies(mut replies: Vec<redis::Value>, acks: usize) -> Result<(Vec<bool>, Taken)> {
    let taken = replies.split_off(acks.min(replies.len()));
    let removed = replies
        .into_iter()
        .map(|reply| Ok(parse::<i64>(Some(reply))? == 1))
        .collect::<Result<Vec<bool>>>()?;
    let taken = taken
        .into_iter()
        .map(|raw| match raw {
            redis::Value::ServerError(e) if e.code() == "WRONGTYPE" => Ok(None),
            raw => parse(Some(raw)),
        })
        .collect::<Result<Taken>>()?;
    Ok((removed, taken))
}

/// Whether Redis refused a command (or a `MULTI`) because it is at `maxmemory`.
pub(super) fn is_out_of_memory(error: &redis::RedisError) -> bool {
    crate::error::has_server_code(error, "OOM")
}

/// [`ack_and_take`] through `ack_plain.lua`, one call per success, for a Redis at `maxmemory`
/// (its `allow-oom` flag lets it settle where the `MULTI` was refused), and for a batch with a
/// job stored aside (the script deletes its side key if the job was in flight). The first
/// call takes the jobs.
async fn ack_by_script(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    acks: &[Ack<'_>],
    take: usize,
) -> Result<Acked> {
    let mut acked = Acked::default();
    for (i, ack) in acks.iter().enumerate() {
        let job = ack.job;
        let mut call = scripts::ACK_PLAIN.key(keys.inflight(&job.queue, &job.process));
        call.key(keys.queue(&job.queue));
        if let Some(side) = super::aside::key_of(keys, job) {
            call.key(side);
        }
        let reply: Vec<redis::Value> = call
            .arg(&job.raw)
            .arg(ack.record)
            .arg(super::status::retention_ms(ack.retention))
            .arg(if i == 0 { take } else { 0 })
            .invoke_async(conn)
            .await?;
        let mut values = reply.into_iter();
        acked.removed.push(parse::<i64>(values.next())? == 1);
        for raw in values {
            acked.taken.push(taken_job(job, parse(Some(raw))?));
        }
    }
    Ok(acked)
}

fn parse<T: redis::FromRedisValue>(value: Option<redis::Value>) -> Result<T> {
    let parsed = redis::from_redis_value(value.unwrap_or(redis::Value::Nil));
    Ok(parsed.map_err(redis::RedisError::from)?)
}
