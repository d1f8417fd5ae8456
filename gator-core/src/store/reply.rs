//! Replies in Redis. A job that waits for a reply leaves its queue in `await.lua` (status
//! `awaiting`, its wait record in its queue's outbox); [`register`] carries the record to the
//! replies' slot (`gator:{replies}:…`, one hash tag, so that a reply finds its wait by key in
//! one script whatever queue the job came from). A reply ([`reply`]) and a timeout
//! ([`expire`]) each turn a wait into a completion in the replies' outbox, in the same script;
//! the hand-off room (`store::handoff::drain_replies`) carries completions to the jobs'
//! queues: a reply makes the job done with the reply as its result (its chain or workflow goes
//! on, its handler job is pushed with the reply), a timeout puts it back in its queue marked
//! failed, so that its retry policy applies. Every
//! step is idempotent and a crash between two leaves a record that the next drain finishes.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a reply that came before its wait is kept for it, and how long a delivered reply
/// makes later ones duplicates, by default.
pub const DEFAULT_LOOKBACK: Duration = Duration::from_secs(600);

/// A job's wait for a reply, as its queue's outbox and the replies' waits hash hold it.
#[derive(Debug, Serialize, Deserialize)]
pub struct WaitRecord {
    /// The correlation key.
    pub wait: String,
    /// The job's jid.
    pub jid: String,
    /// The list it was fetched from.
    pub queue: String,
    /// How long it waits, ms.
    pub timeout_ms: u64,
    /// The job's payload as fetched.
    pub payload: String,
    /// The handler job's payload, pushed with the reply, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<String>,
    /// How long the job's done record is kept, ms.
    pub ret: u64,
    /// A durable job's wait (`ctx.wait_for_reply`): the reply is saved in its payload as the
    /// result of step `reply:<key>` and the job goes back to its queue, instead of ending done.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resume: bool,
}

/// What `reply` did with a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A job waited for it: it goes on with it.
    Delivered,
    /// No job waits for it yet: kept for the lookback window, for the wait that comes.
    Kept,
    /// A reply to this key came before (within the lookback window): this one is dropped.
    Duplicate,
}

fn six_keys(keys: &Keys, key: &str) -> [String; 6] {
    [
        keys.reply_waits(),
        keys.reply_deadlines(),
        keys.reply_early(key),
        keys.reply_seen(key),
        keys.reply_outbox(),
        keys.reply_stats(),
    ]
}

/// Settles in-flight `job` as waiting for the reply to `key` (`await.lua`): out of its
/// process's in-flight list, its wait `record` into its queue's outbox, in one step. Whether it
/// was still in flight.
pub async fn settle_waiting(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &crate::store::fetched::Fetched,
    (record, key, resume): (&str, &str, bool),
    timeout: Duration,
) -> Result<bool> {
    let settled: i64 = scripts::AWAIT
        .key(keys.inflight(&job.queue, &job.process))
        .key(keys.outbox(&job.queue))
        .arg(&job.raw)
        .arg(record)
        .arg(key)
        .arg(timeout.as_millis() as u64)
        .arg(if resume { "suspended" } else { "awaiting" })
        .invoke_async(conn)
        .await?;
    Ok(settled == 1)
}

/// Registers the wait `record` (`reply_wait.lua`); a reply that came first completes it.
/// Returns whether a completion was written (drain it).
pub async fn register(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    record: &WaitRecord,
    lookback: Duration,
) -> Result<bool> {
    let [waits, deadlines, early, seen, outbox, stats] = six_keys(keys, &record.wait);
    let outcome: String = scripts::REPLY_WAIT
        .key(waits)
        .key(deadlines)
        .key(early)
        .key(seen)
        .key(outbox)
        .key(stats)
        .arg(&record.wait)
        .arg(&record.jid)
        .arg(serde_json::to_string(record)?)
        .arg(record.timeout_ms)
        .arg(super::status::retention_ms(lookback))
        .invoke_async(conn)
        .await
        .map_err(super::broken::of_script)?;
    Ok(outcome != "waiting")
}

/// Delivers `reply` (JSON) to the job waiting for `key`, or keeps it, or drops a duplicate
/// (`reply.lua`).
pub async fn reply(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    key: &str,
    reply: &str,
    lookback: Duration,
) -> Result<Delivery> {
    let [waits, deadlines, early, seen, outbox, stats] = six_keys(keys, key);
    let outcome: String = scripts::REPLY
        .key(waits)
        .key(deadlines)
        .key(early)
        .key(seen)
        .key(outbox)
        .key(stats)
        .arg(key)
        .arg(reply)
        .arg(super::status::retention_ms(lookback))
        .invoke_async(conn)
        .await
        .map_err(super::broken::of_script)?;
    Ok(match outcome.as_str() {
        "delivered" => Delivery::Delivered,
        "kept" => Delivery::Kept,
        _ => Delivery::Duplicate,
    })
}

/// Ends up to 100 waits whose time ran out (`reply_expire.lua`); returns how many.
pub async fn expire(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<usize> {
    let ended: usize = scripts::REPLY_EXPIRE
        .key(keys.reply_waits())
        .key(keys.reply_deadlines())
        .key(keys.reply_outbox())
        .key(keys.reply_stats())
        .arg(100)
        .arg("")
        .arg("")
        .invoke_async(conn)
        .await
        .map_err(super::broken::of_script)?;
    Ok(ended)
}

/// Ends the wait of `jid` for `key` (a cancel); its wait record, or `None` if it was not
/// waiting.
pub async fn end_wait(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    key: &str,
    jid: &str,
) -> Result<Option<WaitRecord>> {
    let ended: Option<String> = scripts::REPLY_EXPIRE
        .key(keys.reply_waits())
        .key(keys.reply_deadlines())
        .key(keys.reply_outbox())
        .key(keys.reply_stats())
        .arg(100)
        .arg(key)
        .arg(jid)
        .invoke_async(conn)
        .await
        .map_err(super::broken::of_script)?;
    Ok(ended.and_then(|record| serde_json::from_str(&record).ok()))
}

/// Counters of the replies: `(delivered, kept, duplicates, timeouts)`.
pub async fn stats(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<[u64; 4]> {
    let read = redis::cmd("HMGET")
        .arg(keys.reply_stats())
        .arg("delivered")
        .arg("kept")
        .arg("duplicates")
        .arg("timeouts")
        .query_async(conn)
        .await;
    let values: Vec<Option<u64>> = super::broken::or_empty(&keys.reply_stats(), read)?;
    let mut out = [0; 4];
    for (slot, value) in out.iter_mut().zip(values) {
        *slot = value.unwrap_or(0);
    }
    Ok(out)
}
