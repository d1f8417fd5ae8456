//! Replies in Redis. A job that waits for a reply leaves its queue in `await.lua` (status
//! `awaiting`, its wait record in its queue's outbox); [`register`] carries the record to the
//! replies' slot (`gator:{replies}:…`, one hash tag, so that a reply finds its wait by key in
//! one script whatever queue the job came from). A reply ([`reply`]) and a timeout
//! ([`expire`]) each turn a wait into a completion in the replies' outbox, in the same script;
//! [`drain`] carries completions to the jobs' queues: a reply makes the job done with the reply
//! as its result (its chain or workflow goes on, its handler job is pushed with the reply), a
//! timeout puts it back in its queue marked failed, so that its retry policy applies. Every
//! step is idempotent and a crash between two leaves a record that the next drain finishes.

use crate::error::Result;
use crate::payload::PayloadDocument;
use crate::store::keys::Keys;
use crate::store::scripts;
use crate::transport::connection::Connection;
use crate::transport::replication::ReplicaWait;
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
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
}

/// A completion in the replies' outbox.
#[derive(Debug, Deserialize)]
struct Completion {
    kind: String,
    waiter: WaitRecord,
    #[serde(default)]
    reply: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<String>,
}

/// What [`reply`] did with a reply.
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
    job: &crate::store::inflight::Fetched,
    record: &str,
    key: &str,
    timeout: Duration,
) -> Result<bool> {
    let settled: i64 = scripts::AWAIT
        .key(keys.inflight(&job.queue, &job.process))
        .key(keys.outbox(&job.queue))
        .arg(&job.raw)
        .arg(record)
        .arg(key)
        .arg(timeout.as_millis() as u64)
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

/// Carries every completion in the replies' outbox to its job's queue (see the module doc);
/// returns how many it found.
pub async fn drain(
    conn: &mut Connection,
    keys: &Keys,
    wait: Option<&ReplicaWait>,
) -> Result<usize> {
    let read = redis::cmd("LRANGE")
        .arg(keys.reply_outbox())
        .arg(0)
        .arg(99)
        .query_async(conn)
        .await;
    let records: Vec<String> = super::broken::or_empty(&keys.reply_outbox(), read)?;
    for record in &records {
        complete(conn, keys, record, wait).await?;
    }
    Ok(records.len())
}

/// Carries one completion to its job's queue, then removes it from the replies' outbox.
async fn complete(
    conn: &mut Connection,
    keys: &Keys,
    record: &str,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    if let Ok(completion) = serde_json::from_str::<Completion>(record)
        && super::keys::validate_stored_queue(&completion.waiter.queue).is_ok()
    {
        let waiter = &completion.waiter;
        match (completion.kind.as_str(), &completion.reply) {
            ("done", Some(reply)) => done(conn, keys, waiter, reply.get(), wait).await?,
            _ => {
                let error = completion.error.unwrap_or_else(|| {
                    format!(
                        "no reply to {:?} within {} ms",
                        waiter.wait, waiter.timeout_ms
                    )
                });
                failed(conn, keys, waiter, &error, wait).await?;
            }
        }
    }
    // A record that does not parse names nothing to carry: dropping it loses nothing.
    redis::cmd("LREM")
        .arg(keys.reply_outbox())
        .arg(1)
        .arg(record)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// The job got its reply: done with it as its result, its hand-off carried on, its handler
/// pushed with the reply in its payload's `reply` field.
async fn done(
    conn: &mut Connection,
    keys: &Keys,
    waiter: &WaitRecord,
    reply: &str,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    let doc = PayloadDocument::parse(waiter.payload.as_bytes()).ok();
    let attempts = doc.as_ref().map_or(1, |d| d.attempt().saturating_add(1));
    let retention = Duration::from_millis(waiter.ret);
    let handoff = doc
        .as_ref()
        .and_then(|d| super::inflight::handoff_on_success(d, Some(reply), retention));
    scripts::REPLY_DONE
        .key(keys.job(&waiter.queue, &waiter.jid))
        .key(keys.outbox(&waiter.queue))
        .arg(format!("{attempts} {reply}"))
        .arg(waiter.ret.max(1))
        .arg(handoff.as_deref().unwrap_or(""))
        // A unique job's payload, whose lock its success releases (only those pay for it).
        .arg(match doc.as_ref().and_then(|d| d.unique_until()) {
            Some(_) => waiter.payload.as_str(),
            None => "",
        })
        .invoke_async::<i64>(conn)
        .await?;
    if let Some(then) = &waiter.then
        && let Ok(handler) = PayloadDocument::parse(then.as_bytes())
    {
        let with_reply = handler.rewrite(&[("reply", reply.to_owned())]);
        super::chain::push_once(conn, keys, &with_reply, handler.jid(), true, wait).await?;
    }
    if let Some(record) = handoff
        && let Err(e) = Box::pin(super::chain::advance(
            conn,
            keys,
            &waiter.queue,
            &record,
            wait,
        ))
        .await
    {
        tracing::warn!(queue = %waiter.queue, error = %e, "could not hand a replied job's chain or workflow on yet; the next drain of the outbox will");
    }
    Ok(())
}

/// The job's wait failed (timed out, or its key was taken): back in its queue, marked, so that
/// the worker that fetches it records the failure under the job's retry policy.
async fn failed(
    conn: &mut Connection,
    keys: &Keys,
    waiter: &WaitRecord,
    error: &str,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    let Ok(doc) = PayloadDocument::parse(waiter.payload.as_bytes()) else {
        return Ok(());
    };
    let marker = serde_json::json!({ "attempt": doc.attempt(), "error": error }).to_string();
    let marked = doc.rewrite(&[("reply_failed", marker)]);
    let guard = format!("{}.w{}", waiter.jid, doc.attempt());
    super::chain::push_once(conn, keys, &marked, &guard, true, wait).await?;
    Ok(())
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
