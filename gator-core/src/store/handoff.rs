//! The hand-off room: every record an outbox carries, from the step that ends to the step
//! that goes on. A success or death records its hand-off in its queue's outbox in the script
//! that settles it (the records are built here: [`on_success`], [`on_end`]); [`advance`]
//! carries one record on, [`drain_outbox`] the ones a crash left, and [`drain_replies`] carries
//! a reply or a timeout to its waiting job. Chains ([`chain`]), workflows ([`workflow`]) and
//! replies ([`reply`]) each own their own keys and never call each other: a hand-off between
//! them goes through this room.

use crate::error::Result;
use crate::payload::{ChainLink, PayloadDocument};
use crate::store::keys::{Keys, validate_stored_queue};
use crate::store::reply::{self, WaitRecord};
use crate::store::{chain, handed, scripts, workflow};
use crate::transport::connection::Connection;
use crate::transport::replication::ReplicaWait;
use crate::wire::durable::Saved;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::time::Duration;

/// The outbox record a success of `doc` writes, if it has one: for a workflow step, its
/// [`workflow::Report`] (with `result`, the workflow kept `retention` once finished);
/// for a chain step with a next step, its link.
pub fn on_success(
    doc: &PayloadDocument<'_>,
    result: Option<&str>,
    retention: Duration,
) -> Option<String> {
    if let Some(link) = doc.workflow() {
        let result =
            result.and_then(|r| serde_json::value::RawValue::from_string(r.to_owned()).ok());
        let report = workflow::Report {
            wf: link.id,
            jid: doc.jid().to_owned(),
            end: "done".to_owned(),
            result,
            ret: super::status::retention_ms(retention),
        };
        return Some(report.to_json());
    }
    let link = doc.chain()?;
    link.next_jid.as_ref()?;
    serde_json::to_string(&link).ok()
}

/// The outbox record a death writes: for a workflow step (its dead-set `entry` still carries
/// its link), its [`workflow::Report`]; `None` for any other job.
pub fn on_death(entry: &str, retention: Duration) -> Option<String> {
    on_end(entry, "dead", retention)
}

/// The outbox record of a workflow step that ended otherwise than by success (`end`: `dead`
/// or `cancelled`); `None` for any other job.
pub fn on_end(payload: &str, end: &str, retention: Duration) -> Option<String> {
    let doc = PayloadDocument::parse(payload.as_bytes()).ok()?;
    let link = doc.workflow()?;
    let report = workflow::Report {
        wf: link.id,
        jid: doc.jid().to_owned(),
        end: end.to_owned(),
        result: None,
        ret: super::status::retention_ms(retention),
    };
    Some(report.to_json())
}

/// Carries on the hand-off `record` from `queue`'s outbox, then removes the record: a
/// workflow step's end goes to its workflow ([`workflow::report`]), a job's wait for a reply
/// to the replies' slot ([`reply::register`], then [`drain_replies`] if a reply came first),
/// and a chain link moves the chain's next step to its queue ([`chain::hand_on`]). Each step
/// is idempotent, so running this again after a crash anywhere, or twice at once, moves a
/// step once and never loses it.
pub async fn advance(
    conn: &mut Connection,
    keys: &Keys,
    queue: &str,
    record: &str,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    // A workflow step's end, for its workflow's home slot (see `store::workflow`).
    if let Ok(report) = serde_json::from_str::<workflow::Report>(record) {
        if workflow::split_id(&report.wf).is_ok() {
            workflow::report(conn, keys, &report, wait).await?;
        }
    } else if let Ok(waiting) = serde_json::from_str::<WaitRecord>(record) {
        // A job's wait for a reply, for the replies' slot (see `store::reply`).
        if reply::register(conn, keys, &waiting, reply::DEFAULT_LOOKBACK).await? {
            drain_replies(conn, keys, wait).await?;
        }
    } else if let Some(ChainLink {
        id,
        list_queue,
        next_jid: Some(jid),
        next_queue: Some(next_queue),
    }) = serde_json::from_str::<ChainLink>(record).ok()
        && validate_stored_queue(&list_queue).is_ok()
        && validate_stored_queue(&next_queue).is_ok()
    {
        chain::hand_on(conn, keys, (&id, &list_queue), (&jid, &next_queue), wait).await?;
    }
    // A record that does not parse names nothing to move: dropping it loses nothing.
    redis::cmd("LREM")
        .arg(keys.outbox(queue))
        .arg(1)
        .arg(record)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// Finishes every hand-off waiting in `queue`'s outbox (those a crash or an outage left
/// behind); returns how many it found.
pub async fn drain_outbox(
    conn: &mut Connection,
    keys: &Keys,
    queue: &str,
    wait: Option<&ReplicaWait>,
) -> Result<usize> {
    let records: Vec<String> = redis::cmd("LRANGE")
        .arg(keys.outbox(queue))
        .arg(0)
        .arg(99)
        .query_async(conn)
        .await?;
    for record in &records {
        advance(conn, keys, queue, record, wait).await?;
    }
    Ok(records.len())
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

/// Carries every completion in the replies' outbox to its job's queue (see `store::reply`);
/// returns how many it found.
pub async fn drain_replies(
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
        && validate_stored_queue(&completion.waiter.queue).is_ok()
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
    if waiter.resume {
        return resumed(conn, keys, waiter, reply, wait).await;
    }
    let doc = PayloadDocument::parse(waiter.payload.as_bytes()).ok();
    let attempts = doc.as_ref().map_or(1, |d| d.attempt().saturating_add(1));
    let retention = Duration::from_millis(waiter.ret);
    let handoff = doc
        .as_ref()
        .and_then(|d| on_success(d, Some(reply), retention));
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
        handed::push_once(conn, keys, &with_reply, handler.jid(), true, wait).await?;
    }
    if let Some(record) = handoff
        && let Err(e) = Box::pin(advance(conn, keys, &waiter.queue, &record, wait)).await
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
    handed::push_once(conn, keys, &marked, &guard, true, wait).await?;
    Ok(())
}

/// A durable job's reply came (`ctx.wait_for_reply`): the job goes back to its queue with the
/// reply saved in its payload as the result of step `reply:<key>`, and runs on from its wait.
/// A reply past the job's bounds fails the wait as a timeout does.
async fn resumed(
    conn: &mut Connection,
    keys: &Keys,
    waiter: &WaitRecord,
    reply: &str,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    let Ok(doc) = PayloadDocument::parse(waiter.payload.as_bytes()) else {
        return Ok(());
    };
    let name = format!("reply:{}", waiter.wait);
    let saved = Saved::parse(doc.durable()).and_then(|saved| {
        let value = RawValue::from_string(reply.to_owned()).map_err(|e| e.to_string())?;
        saved.with_step(&name, value)
    });
    let saved = match saved {
        Ok(saved) => saved,
        Err(error) => {
            let error = format!("the reply to {:?} cannot be saved: {error}", waiter.wait);
            return failed(conn, keys, waiter, &error, wait).await;
        }
    };
    let payload = doc.rewrite(&[("durable", saved.to_json())]);
    let guard = format!("{}.r{}.{}", waiter.jid, doc.attempt(), waiter.wait);
    handed::push_once(conn, keys, &payload, &guard, true, wait).await?;
    Ok(())
}
