//! Settling a job that expired before it started ([`crate::expiry`]): the worker that fetched
//! it asks Redis's clock (`TIME`, for jobs with a deadline only), then writes it off in one script, out of its
//! in-flight list and recorded `expired` together: kept in the dead set (`kill.lua`, its
//! entry's error saying why) or dropped (`cancelled.lua`). If the worker dies in between, the
//! job is still in flight; recovery queues it again, and the next worker finds it expired too.

use crate::error::Result;
use crate::store::dead::DeadCap;
use crate::store::inflight::{Fetched, Killed};
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// Settles `job`, expired, into its queue's dead set as `entry` (the payload with its
/// error), recorded `expired <at> <attempts> <deadline> dead` (`kill.lua`); `handoff` is a
/// workflow step's end for its workflow, as a death's.
pub async fn kill(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    (entry, deadline): (&str, u64),
    cap: DeadCap,
    handoff: Option<&str>,
) -> Result<Killed> {
    let tail = format!("{deadline} dead");
    super::inflight::kill_recording(conn, keys, job, entry, cap, handoff, &tail).await
}

/// Settles `job` (jid `jid`, `attempts` failed before), expired, without keeping it: recorded
/// `expired <at> <attempts> <deadline> drop` for `retention` (`cancelled.lua`); false if it was
/// no longer in flight.
pub async fn drop(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    (jid, attempts, deadline): (&str, u32, u64),
    retention: Duration,
    handoff: Option<&str>,
) -> Result<bool> {
    let tail = format!("{attempts} {deadline} drop");
    let recorded = ("expired", tail.as_str());
    super::cancel::settle_as(conn, keys, job, jid, retention, handoff, recorded).await
}
