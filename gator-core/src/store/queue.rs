//! The queue lists: enqueue, fetch, and putting a job back.

use crate::error::Result;
use crate::payload::Payload;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;
use std::collections::BTreeMap;
use std::time::Duration;

/// A job taken off a queue: its queue and the payload text exactly as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The queue it came from.
    pub queue: String,
    /// The payload as stored (possibly not valid JSON: decoding is the caller's step).
    pub raw: String,
}

/// Pushes `payloads` to the tails of their queues' lists in one round trip.
///
/// The queue goes into the known-queues set first, in the same pipeline: the set is a global
/// key and is never written inside a per-queue script (Redis Cluster), and the order means a
/// failure between the two can leave an empty queue listed, never a job nobody looks for.
pub async fn enqueue(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payloads: &[Payload],
) -> Result<()> {
    let mut by_queue: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for p in payloads {
        by_queue
            .entry(p.queue.as_str())
            .or_default()
            .push(p.to_json());
    }
    let mut pipe = redis::pipe();
    for (queue, jobs) in &by_queue {
        pipe.sadd(keys.queues(), *queue).ignore();
        pipe.rpush(keys.queue(queue), jobs).ignore();
    }
    pipe.query_async::<()>(conn).await?;
    Ok(())
}

/// Waits up to `timeout` for a job on the first non-empty queue of `queues`, in that order.
///
/// Blocking (BLPOP) rather than polling: an idle worker costs Redis nothing and a new job is
/// picked up the moment it is pushed. `conn` must be a dedicated connection whose response
/// timeout exceeds `timeout`: a client that gives up early leaves the server to pop the job
/// and the reply is lost with it.
pub async fn fetch(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[&str],
    timeout: Duration,
) -> Result<Option<Fetched>> {
    let list_keys: Vec<String> = queues.iter().map(|q| keys.queue(q)).collect();
    let popped: Option<(String, String)> = redis::cmd("BLPOP")
        .arg(&list_keys)
        .arg(timeout.as_secs_f64())
        .query_async(conn)
        .await?;
    Ok(popped.map(|(key, raw)| {
        let index = list_keys.iter().position(|k| *k == key).unwrap_or(0);
        Fetched {
            queue: queues[index].to_owned(),
            raw,
        }
    }))
}

/// Puts a fetched job back at the head of its queue, so it is the next one taken.
pub async fn requeue(conn: &mut impl ConnectionLike, keys: &Keys, job: &Fetched) -> Result<()> {
    redis::cmd("LPUSH")
        .arg(keys.queue(&job.queue))
        .arg(&job.raw)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// How many jobs wait in `queue`.
pub async fn len(conn: &mut impl ConnectionLike, keys: &Keys, queue: &str) -> Result<usize> {
    Ok(redis::cmd("LLEN")
        .arg(keys.queue(queue))
        .query_async(conn)
        .await?)
}

/// Every queue a job was ever dispatched to, sorted.
pub async fn known(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<Vec<String>> {
    let mut queues: Vec<String> = redis::cmd("SMEMBERS")
        .arg(keys.queues())
        .query_async(conn)
        .await?;
    queues.sort();
    Ok(queues)
}
