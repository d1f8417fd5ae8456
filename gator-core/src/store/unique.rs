//! Unique jobs' locks in Redis (see [`crate::unique`]): the dispatch that takes one with its
//! job, its release as the job starts or succeeds, and reading who holds one. Deaths,
//! discards and cancels release the lock in their own scripts (`kill.lua`, `cancelled.lua`,
//! `cancel.lua`, through `unique_lib.lua`).

use crate::error::Result;
use crate::payload::Payload;
use crate::store::fetched::Fetched;
use crate::store::keys::Keys;
use crate::store::lease::millis;
use crate::store::schedule::When;
use crate::store::scripts;
use crate::store::status::Done;
use crate::unique::Dispatched;
use redis::aio::ConnectionLike;

/// Stores `payload` (which carries a `unique` field) with its lock, in one script
/// (`unique_dispatch.lua`): on its queue now (`when` `None`), or scheduled `when`. Returns
/// [`Dispatched::Duplicate`] with the holder's jid if the lock was held (for a debounced job
/// still pending, which this payload replaced), and the due time if the job was scheduled.
///
/// The queue must be in the known-queues set already (a global key, written by its own
/// command), and in the controlled-queues set if the payload has flow options.
pub async fn dispatch(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payload: &Payload,
    when: Option<When>,
) -> Result<(Dispatched, Option<u64>)> {
    let (jid, duplicate, due) = invoke(conn, keys, payload, when, None).await?;
    let dispatched = if duplicate == 1 {
        Dispatched::Duplicate(jid)
    } else {
        Dispatched::New(jid)
    };
    Ok((dispatched, (due > 0).then_some(due)))
}

/// `unique_dispatch.lua` for `payload` due `when`, with the outbox relay's guard kept `guard`
/// if given (`store/relayed.rs`): its reply, `(jid, 0 new | 1 duplicate | 2 relayed before,
/// due ms or 0)`.
pub(crate) async fn invoke(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payload: &Payload,
    when: Option<When>,
    guard: Option<std::time::Duration>,
) -> Result<(String, u8, u64)> {
    let mut invocation = scripts::UNIQUE_DISPATCH.key(keys.queue(&payload.queue));
    invocation.key(keys.scheduled(&payload.queue));
    if guard.is_some() {
        invocation.key(keys.relayed(&payload.queue, &payload.jid));
    }
    match when {
        None => invocation.arg("now").arg(0),
        Some(When::At(ms)) => invocation.arg("at").arg(ms),
        Some(When::In(delay)) => invocation.arg("in").arg(millis(delay)),
    };
    invocation.arg(payload.to_json());
    if let Some(guard) = guard {
        invocation.arg(millis(guard));
    }
    Ok(invocation.invoke_async(conn).await?)
}

/// Releases the lock of `job` (a payload with `unique.until = "start"`) as it starts, if the
/// lock still names it (`unique_release.lua`). Returns whether it did.
pub async fn release(conn: &mut impl ConnectionLike, keys: &Keys, job: &Fetched) -> Result<bool> {
    let released: i64 = scripts::UNIQUE_RELEASE
        .key(keys.queue(&job.queue))
        .arg(&job.raw)
        .invoke_async(conn)
        .await?;
    Ok(released == 1)
}

/// Settles the success of a unique job whose lock lasts until its success, and that hands
/// nothing off: `ack.lua` with an empty hand-off, which releases the lock (and the units of a
/// job admitted from a controlled queue) in the same step. Returns false if the job was no
/// longer in flight.
pub async fn ack(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    done: &Done<'_>,
) -> Result<bool> {
    let mut call = scripts::ACK.key(keys.inflight(&job.queue, &job.process));
    call.key(keys.outbox(&job.queue));
    if let Some(side) = super::aside::key_of(keys, job) {
        call.key(side);
    }
    let settled: i64 = call
        .arg(&job.raw)
        .arg("")
        .arg(done.tail())
        .arg(super::status::retention_ms(done.retention))
        .invoke_async(conn)
        .await?;
    Ok(settled == 1)
}

/// The jid of the job holding the lock of unique key `key` on `queue`, if one does.
pub async fn holder(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    key: &str,
) -> Result<Option<String>> {
    let value: Option<String> = redis::cmd("GET")
        .arg(keys.unique(queue, &crate::unique::digest(key)))
        .query_async(conn)
        .await?;
    Ok(value.map(|value| {
        // A debounced job's lock holds its pending payload, which names its jid.
        if value.starts_with('{') {
            crate::payload::Payload::from_json(&value).map_or(value, |p| p.jid)
        } else {
            value
        }
    }))
}
