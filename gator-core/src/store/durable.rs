//! Durable jobs' writes (`context::durable`): saving a running job's state into its payload
//! in flight (`durable_save.lua`), and parking a run that sleeps or yields its slice
//! (`suspend.lua`). Both touch the keys of the job's queue only.

use crate::error::Result;
use crate::store::fetched::Fetched;
use crate::store::keys::Keys;
use crate::store::scripts;
use crate::wire::durable::{Stored, Wake};
use redis::aio::ConnectionLike;
use std::time::{Duration, UNIX_EPOCH};

/// Rewrites the payload `was` of a job in `process`'s in-flight list of `queue` as `now`,
/// if `process` holds a live lease on the queue (`durable_save.lua`).
pub async fn save(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    (queue, process): (&str, &str),
    was: &str,
    now: &str,
) -> Result<Stored> {
    let found: i64 = scripts::DURABLE_SAVE
        .key(keys.inflight(queue, process))
        .key(keys.leases(queue))
        .key(keys.units(queue, process))
        .arg(process)
        .arg(was)
        .arg(now)
        .invoke_async(conn)
        .await?;
    // 0: not in flight here; -1: no live lease (recovery may take it any moment).
    Ok(if found == 1 {
        Stored::Saved
    } else {
        Stored::Lost
    })
}

/// Parks `job` (in flight as `job.raw`) as `payload` in its queue's scheduled set until
/// `wake`, its record `suspended <due> <reason>` (`suspend.lua`). The due time (ms), or
/// `None` if the job was no longer in flight.
pub async fn suspend(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    payload: &str,
    wake: Wake,
    reason: &str,
) -> Result<Option<u64>> {
    let (when, mode) = match wake {
        Wake::In(delay) => (millis(delay), "in"),
        Wake::At(at) => (at.duration_since(UNIX_EPOCH).map_or(0, millis), "at"),
    };
    let due: u64 = scripts::SUSPEND
        .key(keys.inflight(&job.queue, &job.process))
        .key(keys.scheduled(&job.queue))
        .arg(&job.raw)
        .arg(payload)
        .arg(when)
        .arg(mode)
        .arg(reason)
        .invoke_async(conn)
        .await?;
    Ok((due > 0).then_some(due))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
