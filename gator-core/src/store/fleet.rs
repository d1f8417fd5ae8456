//! What the admin reads of a queue besides its sets: jobs held in flight, the head of its list,
//! and the jobs parked on a controlled queue. Each fn one pipeline or a few commands, bounded by
//! the queue's processes and parking keys, never by its jobs (but [`parked_jids`], for
//! clearing a controlled queue).

use super::flow;
use crate::error::Result;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;

/// How many entries `queue`'s scheduled, retry and dead sets hold.
pub async fn set_sizes(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<(u64, u64, u64)> {
    let (scheduled, later, retry, dead): (u64, Option<u64>, u64, u64) = redis::pipe()
        .zcard(keys.scheduled(queue))
        .get(keys.later_count(queue))
        .zcard(keys.retry(queue))
        .zcard(keys.dead(queue))
        .query_async(conn)
        .await?;
    // The jobs scheduled beyond the horizon wait in lists (`store::later`), counted apart.
    Ok((scheduled + later.unwrap_or(0), retry, dead))
}

/// How many jobs wait in plain `queue`'s list, and its head: the oldest of them.
pub async fn list_head(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<(u64, Option<String>)> {
    Ok(redis::pipe()
        .llen(keys.queue(queue))
        .lindex(keys.queue(queue), 0)
        .query_async(conn)
        .await?)
}

/// The `enqueued_at` of a stored payload, read as a worker reads it (the lenient document:
/// an integer or a float).
pub fn enqueued_at(raw: &str) -> Option<u64> {
    crate::payload::PayloadDocument::parse(raw.as_bytes())
        .ok()?
        .enqueued_at_ms()
}

/// The jids of every job parked in controlled `queue`: its backlog, critical set and parking
/// keys' sets.
pub async fn parked_jids(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<Vec<String>> {
    let mut raws: Vec<String> = redis::cmd("LRANGE")
        .arg(keys.backlog(queue))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?;
    let mut parked = flow::zmembers(conn, &keys.critical(queue)).await?;
    for parking_key in flow::parking_keys(conn, keys, queue).await?.all() {
        parked.extend(flow::zmembers(conn, &keys.held(queue, parking_key)).await?);
    }
    raws.extend(
        parked
            .iter()
            .map(|member| flow::parked_payload(member).to_owned()),
    );
    Ok(raws
        .iter()
        .filter_map(|raw| super::status::jid_of(raw.as_bytes()))
        .collect())
}

/// Jobs of `queue` in the in-flight lists of the processes in its lease index.
pub async fn busy(conn: &mut impl ConnectionLike, keys: &Keys, queue: &str) -> Result<u64> {
    let holders: Vec<String> = redis::cmd("ZRANGE")
        .arg(keys.leases(queue))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?;
    if holders.is_empty() {
        return Ok(0);
    }
    let mut pipe = redis::pipe();
    for process in &holders {
        pipe.llen(keys.inflight(queue, process));
    }
    let lens: Vec<u64> = pipe.query_async(conn).await?;
    Ok(lens.into_iter().sum())
}

/// The `enqueued_at` of the oldest job parked in controlled `queue`: the heads of its backlog,
/// its critical set and each parking key's set (one command each).
pub async fn oldest_parked(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<Option<u64>> {
    let parking_keys = flow::parking_keys(conn, keys, queue).await?;
    let mut pipe = redis::pipe();
    pipe.lrange(keys.backlog(queue), 0, 0);
    pipe.zrange(keys.critical(queue), 0, 0);
    for parking_key in parking_keys.all() {
        pipe.zrange(keys.held(queue, parking_key), 0, 0);
    }
    let heads: Vec<Vec<String>> = pipe.query_async(conn).await?;
    let (backlog, parked) = heads
        .split_first()
        .map_or((&[][..], &[][..]), |(b, p)| (&b[..], p));
    Ok(backlog
        .iter()
        .map(String::as_str)
        .chain(
            parked
                .iter()
                .flatten()
                .map(|member| flow::parked_payload(member)),
        )
        .filter_map(enqueued_at)
        .min())
}
