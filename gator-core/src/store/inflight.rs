//! Crash-safe fetch and settle: every fetch moves a job into its process's in-flight list, and
//! every outcome takes it out in the same atomic step that records the outcome. A job is always
//! in exactly one of: its queue, an in-flight list, the scheduled/retry/dead sets, a chain list.

use crate::error::Result;
use crate::payload::ChainLink;
use crate::store::dead::DeadCap;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// A job fetched by a process: where it came from and its payload exactly as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The queue it came from.
    pub queue: String,
    /// The process whose in-flight list holds it.
    pub process: String,
    /// The payload as stored (possibly not valid JSON: decoding is the caller's step).
    pub raw: String,
}

/// Takes up to `max` jobs of `queue` into `process`'s in-flight list in one call
/// (`fetch.lua`), oldest first. Never blocks.
pub async fn fetch_batch(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
    max: usize,
) -> Result<Vec<Fetched>> {
    let raws: Vec<String> = scripts::FETCH
        .key(keys.queue(queue))
        .key(keys.inflight(queue, process))
        .arg(max.max(1))
        .invoke_async(conn)
        .await?;
    Ok(raws
        .into_iter()
        .map(|raw| Fetched {
            queue: queue.to_owned(),
            process: process.to_owned(),
            raw,
        })
        .collect())
}

/// Waits up to `timeout` for a job of `queue` and takes it into `process`'s in-flight list
/// (BLMOVE). `conn` must be a dedicated connection whose response timeout exceeds `timeout`:
/// a client that gives up early would leave the server to move a job nobody handles (it would
/// stay in flight until recovered).
pub async fn fetch_blocking(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
    timeout: Duration,
) -> Result<Option<Fetched>> {
    let raw: Option<String> = redis::cmd("BLMOVE")
        .arg(keys.queue(queue))
        .arg(keys.inflight(queue, process))
        .arg("LEFT")
        .arg("RIGHT")
        .arg(timeout.as_secs_f64())
        .query_async(conn)
        .await?;
    Ok(raw.map(|raw| Fetched {
        queue: queue.to_owned(),
        process: process.to_owned(),
        raw,
    }))
}

/// Settles a success (`ack.lua`); for a chain step with a next step, enqueues that step in the
/// same script. Returns false if the job was no longer in flight (recovered meanwhile).
pub async fn ack(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    chain: Option<&ChainLink>,
) -> Result<bool> {
    let mut invocation = scripts::ACK.key(keys.inflight(&job.queue, &job.process));
    invocation.arg(&job.raw);
    if let Some(ChainLink {
        id,
        list_queue,
        next_jid: Some(next_jid),
        next_queue: Some(next_queue),
    }) = chain
    {
        invocation
            .key(keys.chain(list_queue, id))
            .key(keys.queue(next_queue))
            .arg(next_jid);
    }
    let settled: i64 = invocation.invoke_async(conn).await?;
    Ok(settled > 0)
}

/// Settles a failure that runs again at `at_ms` with the updated payload (`retry.lua`).
/// Returns false if the job was no longer in flight.
pub async fn retry(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    updated: &str,
    at_ms: u64,
) -> Result<bool> {
    let settled: i64 = scripts::RETRY
        .key(keys.inflight(&job.queue, &job.process))
        .key(keys.retry(&job.queue))
        .arg(&job.raw)
        .arg(updated)
        .arg(at_ms)
        .invoke_async(conn)
        .await?;
    Ok(settled == 1)
}

/// Settles a job into its queue's dead set as `entry`, trimming the set to `cap` (`kill.lua`).
/// Returns false if the job was no longer in flight.
pub async fn kill(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    entry: &str,
    now_ms: u64,
    cap: DeadCap,
) -> Result<bool> {
    let oldest = now_ms.saturating_sub(cap.max_age.as_millis() as u64);
    let left: i64 = scripts::KILL
        .key(keys.dead(&job.queue))
        .key(keys.inflight(&job.queue, &job.process))
        .arg(now_ms)
        .arg(entry)
        .arg(cap.max_jobs)
        .arg(oldest)
        .arg(&job.raw)
        .invoke_async(conn)
        .await?;
    Ok(left >= 0)
}

/// Puts every job in `process`'s in-flight list for `queue` back at the head of the queue
/// (`recover.lua`); returns how many.
pub async fn recover(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
) -> Result<usize> {
    Ok(scripts::RECOVER
        .key(keys.inflight(queue, process))
        .key(keys.queue(queue))
        .invoke_async(conn)
        .await?)
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

/// The payloads `process` holds in flight for `queue`, oldest fetch first.
pub async fn list(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    process: &str,
) -> Result<Vec<String>> {
    Ok(redis::cmd("LRANGE")
        .arg(keys.inflight(queue, process))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?)
}
