//! The outbox relay's writes ([`crate::outbox`]): jobs committed in PostgreSQL pushed to their
//! queue once each (`relay_push.lua`, or `unique_dispatch.lua` with a guard), and the relays'
//! reports of their figures, which the dashboard and the CLI read without a database.

use crate::error::Result;
use crate::payload::Payload;
use crate::store::keys::Keys;
use crate::store::lease::millis;
use crate::store::schedule::When;
use crate::store::scripts;
use crate::unique::Dispatched;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// A job to push: its payload, and when it is due (`None`: now).
pub(crate) struct Push<'a> {
    pub(crate) payload: &'a Payload,
    pub(crate) when: Option<When>,
}

/// Pushes `jobs`, all of `queue`, each unless its guard says it was relayed before; for each,
/// whether it was pushed now.
pub(crate) async fn push(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jobs: &[Push<'_>],
    guard: Duration,
) -> Result<Vec<bool>> {
    let mut invocation = scripts::RELAY_PUSH.key(keys.queue(queue));
    invocation.key(keys.scheduled(queue)).arg(millis(guard));
    for job in jobs {
        invocation.key(keys.relayed(queue, &job.payload.jid));
        match job.when {
            None => invocation.arg("now").arg(0),
            Some(When::At(ms)) => invocation.arg("at").arg(ms),
            Some(When::In(delay)) => invocation.arg("in").arg(millis(delay)),
        };
        invocation.arg(job.payload.to_json());
    }
    let pushed: Vec<u8> = invocation.invoke_async(conn).await?;
    Ok(pushed.into_iter().map(|p| p == 1).collect())
}

/// Dispatches a unique job with its lock (`unique_dispatch.lua`), unless its guard says it was
/// relayed before (`None`).
pub(crate) async fn push_unique(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payload: &Payload,
    when: Option<When>,
    guard: Duration,
) -> Result<Option<Dispatched>> {
    let (jid, duplicate, _due) =
        super::unique::invoke(conn, keys, payload, when, Some(guard)).await?;
    Ok(match duplicate {
        0 => Some(Dispatched::New(jid)),
        1 => Some(Dispatched::Duplicate(jid)),
        _ => None,
    })
}

/// Writes relay `id`'s report (a JSON document holding the Redis time it was written at) into
/// the relays' hash; readers skip a stale one and [`forget`] drops it.
pub(crate) async fn report(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    id: &str,
    report: &str,
) -> Result<()> {
    let key = keys.relays();
    redis::cmd("HSET")
        .arg(&key)
        .arg(id)
        .arg(report)
        .query_async::<()>(conn)
        .await
        .map_err(|e| crate::store::broken::of_key(&key, e))
}

/// Every relay's report, by relay id, as written.
pub(crate) async fn reports(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
) -> Result<Vec<(String, String)>> {
    // A hash Gator did not write reads as no report (logged), as every global key's does:
    // the dashboard's overview and `gator-worker outbox` go on without the relays' figures.
    let key = keys.relays();
    let all = redis::cmd("HGETALL").arg(&key).query_async(conn).await;
    crate::store::broken::or_empty(&key, all)
}

/// Forgets the reports of relays `ids` (stale ones).
pub(crate) async fn forget(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    ids: &[String],
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    redis::cmd("HDEL")
        .arg(keys.relays())
        .arg(ids)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}
