//! Reading status records: the record's key, else the job's field in its bucket (see
//! `wire::jid`): `''` while it is queued, its `scheduled` record while it waits for later, its
//! `done` record once it succeeded. One pipeline per call.

use super::Record;
use crate::error::Result;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;

/// Reads the record of `jid` on `queue`, if any: its status record, else what its bucket's
/// field holds (see `wire::jid`).
pub async fn read(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
) -> Result<Option<Record>> {
    let mut pipe = redis::pipe();
    ask(&mut pipe, keys, queue, jid);
    let replies: Vec<redis::Value> = pipe.query_async(conn).await?;
    answer(&mut replies.into_iter(), keys, queue, jid)
}

/// Reads the records of `jid` on each of `queues`, in one pipeline (on a cluster, one request
/// per node): the first found, with its queue.
pub async fn find(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[String],
    jid: &str,
) -> Result<Option<(String, Record)>> {
    if queues.is_empty() {
        return Ok(None);
    }
    let mut pipe = redis::pipe();
    for queue in queues {
        ask(&mut pipe, keys, queue, jid);
    }
    let replies: Vec<redis::Value> = pipe.query_async(conn).await?;
    let mut replies = replies.into_iter();
    for queue in queues {
        if let Some(record) = answer(&mut replies, keys, queue, jid)? {
            return Ok(Some((queue.clone(), record)));
        }
    }
    Ok(None)
}

/// The records of many jobs, each `(queue, jid)`, in one pipeline; `None` where there is none.
pub async fn read_many(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    jobs: &[(String, String)],
) -> Result<Vec<Option<Record>>> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for (queue, jid) in jobs {
        ask(&mut pipe, keys, queue, jid);
    }
    let replies: Vec<redis::Value> = pipe.query_async(conn).await?;
    let mut replies = replies.into_iter();
    jobs.iter()
        .map(|(queue, jid)| answer(&mut replies, keys, queue, jid))
        .collect()
}

/// Adds the reads of `jid`'s status on `queue` to `pipe`: its record's key, and its bucket's
/// field if its jid names one.
fn ask(pipe: &mut redis::Pipeline, keys: &Keys, queue: &str, jid: &str) {
    pipe.cmd("GET").arg(keys.job(queue, jid));
    if let Some((bucket, field)) = keys.queued_mark(queue, jid) {
        pipe.cmd("HGET").arg(bucket).arg(field);
    }
}

/// The record from the replies of one [`ask`]: the key's record if there is one (any state
/// after the plain path's first: a recovered copy's `running` shows over an earlier `done`),
/// else the bucket's field: `queued` if it is the empty mark, else the record there.
fn answer(
    replies: &mut impl Iterator<Item = redis::Value>,
    keys: &Keys,
    queue: &str,
    jid: &str,
) -> Result<Option<Record>> {
    let mut next = || replies.next().unwrap_or(redis::Value::Nil);
    let text: Option<String> = redis::from_redis_value(next()).map_err(redis::RedisError::from)?;
    let field: Option<String> = match keys.queued_mark(queue, jid) {
        Some(_) => redis::from_redis_value(next()).map_err(redis::RedisError::from)?,
        None => None,
    };
    Ok(match (text, field) {
        // A `queued` key beside a finished record in the bucket: written by a worker of an
        // earlier release or a producer in another language (their `queued` records are
        // keys), and left by a success, which deletes no key. The job finished.
        (Some(text), Some(field)) if text == "queued" && field.starts_with("done ") => {
            Some(Record::parse(&field))
        }
        (Some(text), _) => Some(Record::parse(&text)),
        (None, Some(field)) if field.is_empty() => Some(Record::parse("queued")),
        (None, Some(field)) => Some(Record::parse(&field)),
        (None, None) => None,
    })
}
