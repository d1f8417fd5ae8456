//! The queue lists: enqueue, length, and the known-queues set. (Fetching is in
//! `store::inflight`.)

use crate::error::Result;
use crate::payload::Payload;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use std::collections::BTreeMap;

/// Puts `payloads` on their queues, each with its status record `queued` (`store::status`): an
/// `RPUSH` per queue onto a plain queue's list (in a `MULTI` with an `MSET` of the records), and
/// `enqueue.lua` for jobs with flow options and for the queues whose `RPUSH` failed with
/// WRONGTYPE (a controlled queue's list key holds the `controlled` marker, see [`crate::flow`]):
/// parked there by priority and limit key. So the plain path costs what it did, and a pause or
/// a limit set at any moment holds for every job. With `register`, first records each queue in
/// the known-queues set; a payload with flow options first records its queue in the set of
/// controlled queues. Both sets are global keys, written by commands of their own, never inside
/// a per-queue script (Redis Cluster), and before it: a failure between the two can leave an
/// empty queue listed, never a job nobody looks for. A client registers a queue on its first
/// dispatch and then about once a minute (`client::Client` remembers), so most
/// dispatches are a single command. A plain job marked to go aside (`payload::aside`) is
/// pushed as its marker, its side key `SET` in the same `MULTI`; on a queue whose jobs are
/// parked it is stored whole.
pub async fn enqueue(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payloads: &[Payload],
    register: bool,
) -> Result<()> {
    let by_queue = grouped(keys, payloads);
    if register {
        let queues: Vec<&str> = by_queue.keys().copied().collect();
        let added = redis::cmd("SADD")
            .arg(keys.queues())
            .arg(&queues)
            .query_async::<()>(conn)
            .await;
        // A known-queues set of another type is an index lost, not a reason to lose the job.
        super::broken::or_empty(&keys.queues(), added)?;
    }
    let controlled: Vec<&str> = by_queue
        .iter()
        .filter(|(_, group)| group.flow)
        .map(|(queue, _)| *queue)
        .collect();
    if !controlled.is_empty() {
        super::flow::register(conn, keys, &controlled).await?;
    }
    for (queue, group) in &by_queue {
        if !group.flow && push_plain(conn, keys, queue, group).await? {
            continue;
        }
        let parked = scripts::ENQUEUE
            .key(keys.queue(queue))
            .key(keys.flow(queue))
            .arg(if group.flow { "f" } else { "-" })
            .arg(&group.jobs)
            .invoke_async::<()>(conn)
            .await;
        if let Err(e) = parked {
            if !group.flow {
                forget_records(conn, keys, queue, &group.jids).await;
                super::aside::forget(conn, &group.sides).await;
            }
            return Err(e.into());
        }
    }
    Ok(())
}

/// The jobs of one queue for [`enqueue`]: their texts, jids and side keys.
#[derive(Default)]
struct Group<'a> {
    /// Whether any has flow options: all are parked by `enqueue.lua`.
    flow: bool,
    jobs: Vec<String>,
    jids: Vec<&'a str>,
    /// The side keys of the jobs stored aside (`payload::aside`), with their bytes: set in
    /// the `MULTI` of the plain path. A queue whose jobs are parked stores them whole.
    sides: Vec<(String, Vec<u8>)>,
}

/// `payloads` by queue, as texts to store.
fn grouped<'a>(keys: &Keys, payloads: &'a [Payload]) -> BTreeMap<&'a str, Group<'a>> {
    let mut by_queue: BTreeMap<&str, Group<'a>> = BTreeMap::new();
    for p in payloads {
        let group = by_queue.entry(p.queue.as_str()).or_default();
        group.flow |= p.flow.as_ref().is_some_and(|f| !f.is_empty());
    }
    for p in payloads {
        // Only the plain path's MULTI writes a side key with its job.
        let group = by_queue.entry(p.queue.as_str()).or_default();
        let aside = if group.flow {
            None
        } else {
            crate::payload::aside::split(p)
        };
        match aside {
            Some((text, bytes)) => {
                group.sides.push((keys.payload(&p.queue, &p.jid), bytes));
                group.jobs.push(text);
            }
            None => group.jobs.push(p.to_json()),
        }
        group.jids.push(&p.jid);
    }
    by_queue
}

/// The plain path: `jobs` pushed to `queue`'s list with their queued marks in one `MULTI`,
/// one round trip. Whether they were pushed; `false` if the queue is controlled (its list key
/// holds the marker), and they must be parked.
async fn push_plain(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    group: &Group<'_>,
) -> Result<bool> {
    let mut pipe = redis::pipe();
    pipe.atomic();
    record_queued(&mut pipe, keys, queue, &group.jids);
    super::aside::set_all(&mut pipe, &group.sides);
    let replies = pipe
        .cmd("RPUSH")
        .arg(keys.queue(queue))
        .arg(&group.jobs)
        .query_async::<Vec<redis::Value>>(conn)
        .await;
    // The RPUSH's own reply says whether it pushed: an error inside a MULTI does not undo the
    // MSET, and may come back as a value rather than as the pipeline's error.
    match replies.map(|mut replies| replies.pop()) {
        // Controlled: nothing was pushed; park them (the records say `queued` already, and
        // enqueue.lua writes them again).
        Ok(Some(redis::Value::ServerError(e))) if e.code() == "WRONGTYPE" => Ok(false),
        Err(e) if is_wrong_type(&e) => Ok(false),
        Ok(Some(redis::Value::ServerError(e))) => {
            // The SETs of the side keys ran, the push did not: no key without its job.
            super::aside::forget(conn, &group.sides).await;
            Err(redis::RedisError::from(e).into())
        }
        Ok(_) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Records `jids` as queued: a field in their bucket's hash for a jid that names one (one
/// `HSET` per run of jids that share a bucket, see `wire::jid`), a `queued` record for any
/// other (one `MSET`). A bucket's key is built once per run, not once per jid: a bulk
/// dispatch's jids come 16 to a bucket.
fn record_queued(pipe: &mut redis::Pipeline, keys: &Keys, queue: &str, jids: &[&str]) {
    let mut records = redis::cmd("MSET");
    let mut unmarked = false;
    let mut run: Option<(&str, redis::Cmd)> = None;
    for jid in jids {
        let Some((bucket, field)) = crate::wire::jid::mark_of(jid) else {
            records.arg(keys.job(queue, jid)).arg("queued");
            unmarked = true;
            continue;
        };
        match &mut run {
            Some((last, hset)) if *last == bucket => {
                hset.arg(field).arg("");
            }
            _ => {
                if let Some((_, hset)) = run.take() {
                    pipe.add_command(hset);
                }
                let mut hset = redis::cmd("HSET");
                hset.arg(keys.queued_bucket(queue, bucket))
                    .arg(field)
                    .arg("");
                run = Some((bucket, hset));
            }
        }
    }
    if let Some((_, hset)) = run {
        pipe.add_command(hset);
    }
    if unmarked {
        pipe.add_command(records);
    }
}

/// Deletes the status records the `MULTI` of [`enqueue`] wrote for jobs neither its push nor
/// the script then stored (a key of the queue holds what Gator did not write): they would say
/// `queued` of jobs that are nowhere. Best effort: the caller reports the enqueue's error.
async fn forget_records(conn: &mut impl ConnectionLike, keys: &Keys, queue: &str, jids: &[&str]) {
    let records: Vec<String> = jids.iter().map(|jid| keys.job(queue, jid)).collect();
    let mut pipe = redis::pipe();
    pipe.cmd("DEL").arg(records);
    for jid in jids {
        if let Some((bucket, field)) = keys.queued_mark(queue, jid) {
            pipe.cmd("HDEL").arg(bucket).arg(field);
        }
    }
    let _ = pipe.query_async::<()>(conn).await;
}

pub use crate::error::is_wrong_type;

/// A job's place on a controlled queue, as [`enqueue_with_ticket`] returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredTicket {
    /// The queue's sequence number of the job: tickets of one queue are issued in order.
    pub seq: u64,
    /// Jobs of its parking key that start before it.
    pub ahead: u64,
    /// When it is expected to start, on Redis's clock (ms), if the queue is rate limited.
    pub expected_start_ms: Option<u64>,
}

/// [`enqueue`] for one payload, returning its ticket if the queue is controlled (`None` on a
/// plain queue, where a job has no place other than the tail of the list).
pub async fn enqueue_with_ticket(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payload: &Payload,
    register: bool,
) -> Result<Option<StoredTicket>> {
    if register {
        let added = redis::cmd("SADD")
            .arg(keys.queues())
            .arg(&payload.queue)
            .query_async::<()>(conn)
            .await;
        super::broken::or_empty(&keys.queues(), added)?;
    }
    let flow = payload.flow.as_ref().is_some_and(|f| !f.is_empty());
    if flow {
        super::flow::register(conn, keys, &[payload.queue.as_str()]).await?;
    }
    let tickets: Vec<(u64, u64, i64)> = scripts::ENQUEUE
        .key(keys.queue(&payload.queue))
        .key(keys.flow(&payload.queue))
        .arg(if flow { "ft" } else { "t" })
        .arg(payload.to_json())
        .invoke_async(conn)
        .await?;
    Ok(tickets
        .into_iter()
        .next()
        .map(|(seq, ahead, expected)| StoredTicket {
            seq,
            ahead,
            expected_start_ms: u64::try_from(expected).ok(),
        }))
}

/// Records `queues` in the known-queues set (a worker does this for the queues it serves);
/// skipped if the set is not one ([`super::broken`]).
pub async fn register(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[String],
) -> Result<()> {
    if queues.is_empty() {
        return Ok(());
    }
    let added = redis::cmd("SADD")
        .arg(keys.queues())
        .arg(queues)
        .query_async::<()>(conn)
        .await;
    super::broken::or_empty(&keys.queues(), added)
}

/// How many jobs wait in `queue`. On a queue under flow control, the jobs parked there.
pub async fn len(conn: &mut impl ConnectionLike, keys: &Keys, queue: &str) -> Result<usize> {
    match redis::cmd("LLEN")
        .arg(keys.queue(queue))
        .query_async(conn)
        .await
    {
        Ok(len) => Ok(len),
        Err(e) if is_wrong_type(&e) => super::flow::parked(conn, keys, queue).await,
        Err(e) => Err(e.into()),
    }
}

/// How many jobs `queue`'s list holds, or `None` if the queue is controlled (its list key
/// holds the flow-control marker: its jobs are parked).
pub async fn list_len(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<Option<usize>> {
    match redis::cmd("LLEN")
        .arg(keys.queue(queue))
        .query_async(conn)
        .await
    {
        Ok(len) => Ok(Some(len)),
        Err(e) if is_wrong_type(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Deletes up to `max` jobs from the head of plain `queue`'s list with their status records and
/// unique locks (`clear_queue.lua`); how many, or a negative number if the queue became
/// controlled meanwhile.
pub async fn clear_chunk(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    max: usize,
) -> Result<i64> {
    Ok(scripts::CLEAR_QUEUE
        .key(keys.queue(queue))
        .arg(max)
        .invoke_async(conn)
        .await?)
}

/// The known-queues set, sorted: the queues clients dispatched to and workers serve. Members
/// that are not valid queue names (the set is written by other tools too) are left out, and
/// named in a warning: a name such as `""` would give keys without a hash tag. A set that is
/// not one reads as empty ([`super::broken`]).
pub async fn known(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<Vec<String>> {
    let read = redis::cmd("SMEMBERS")
        .arg(keys.queues())
        .query_async(conn)
        .await;
    let members: Vec<Vec<u8>> = super::broken::or_empty(&keys.queues(), read)?;
    let mut queues = Vec::with_capacity(members.len());
    for member in members {
        match String::from_utf8(member) {
            Ok(name) if super::keys::validate_stored_queue(&name).is_ok() => queues.push(name),
            Ok(name) => warn_once_about(&name, keys),
            Err(e) => warn_once_about(&String::from_utf8_lossy(e.as_bytes()), keys),
        }
    }
    queues.sort();
    Ok(queues)
}

/// Says once per process that `name` in the known-queues set is not a queue name: the set is
/// read every poll, and the warning would otherwise repeat every second.
fn warn_once_about(name: &str, keys: &Keys) {
    static WARNED: std::sync::Mutex<Option<std::collections::HashSet<String>>> =
        std::sync::Mutex::new(None);
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if warned
        .get_or_insert_with(Default::default)
        .insert(name.to_owned())
    {
        tracing::warn!(queue = ?name, set = %keys.queues(), "ignoring an invalid queue name in the known-queues set");
    }
}
