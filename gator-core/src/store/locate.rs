//! Finding a job's entry in a scheduled, retry or dead set by its jid, in bounded work whatever
//! the set's size: its status record says which set it is in and with which score (the time
//! written with it, in the same step), and `locate.lua` reads the members of that score only (a
//! binary search among many). What the admin's actions by jid and a cancel use; a set is never
//! scanned for a jid.
//!
//! An entry with no record to lead to it (written by another producer without one, or a dead
//! entry older than the dead set's age cap whose record expired first) is looked for among the
//! first [`UNRECORDED_READ`] entries of its set only (the oldest, or soonest due): one `ZRANGE`
//! per queue, whatever the set holds behind them.

use super::keys::Keys;
use super::scripts;
use super::sets::{self, SetEntry, SetKind};
use super::status::JobStatus;
use crate::error::{Error, Result};
use redis::aio::ConnectionLike;
use std::time::UNIX_EPOCH;

/// How many entries of a set are read, from its start, for a jid no status record leads to.
pub const UNRECORDED_READ: usize = 500;

/// The score of the entry `status` says its job has in the `kind` set (ms), if it says the job
/// is there: `scheduled <due>`, `suspended <due> <reason>`, `retrying <due>`, `dead <at>`, or
/// `expired <at> ... dead`.
pub fn score_in(kind: SetKind, status: &JobStatus) -> Option<u64> {
    let at = match (kind, status) {
        (SetKind::Scheduled, JobStatus::Scheduled { at }) => at,
        // A durable job parked by `suspend.lua`: in the scheduled set, its due time its score.
        // (Not one waiting for a reply: that waits in the replies' slot, in no set.)
        (SetKind::Scheduled, JobStatus::Suspended { until, reason })
            if !reason.starts_with("reply ") =>
        {
            until
        }
        (SetKind::Retry, JobStatus::Retrying { next_at, .. }) => next_at,
        (SetKind::Dead, JobStatus::Dead { at, .. }) => at,
        (SetKind::Dead, JobStatus::Expired { at, kept: true, .. }) => at,
        _ => return None,
    };
    u64::try_from(at.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

/// The entry of `jid` in `queue`'s `kind` set that has score `score_ms` (from its status
/// record, [`score_in`]), if it is there (`locate.lua`). A set that is not a sorted set is
/// [`Error::BrokenQueue`].
pub async fn locate(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    queue: &str,
    jid: &str,
    score_ms: u64,
) -> Result<Option<SetEntry>> {
    let found = in_set(conn, keys, kind, queue, jid, score_ms).await?;
    if found.is_some() || kind != SetKind::Scheduled {
        return Ok(found);
    }
    // A job scheduled beyond the horizon waits in its minute's list: listed at the minute's
    // start, as a page lists it, so that an action brings it into the set first.
    let listed = super::later::find(conn, keys, queue, jid, score_ms).await?;
    Ok(listed.map(|raw| SetEntry {
        score_ms,
        ..sets::entry(kind, queue, raw, super::later::minute_of(score_ms) as f64)
    }))
}

/// [`locate`] in the set itself (`locate.lua`).
async fn in_set(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    queue: &str,
    jid: &str,
    score_ms: u64,
) -> Result<Option<SetEntry>> {
    let found: Option<String> = scripts::LOCATE
        .key(kind.key(keys, queue))
        .arg(jid)
        .arg(score_ms)
        .invoke_async(conn)
        .await
        .map_err(|e| Error::from(e).of_queue(queue))?;
    Ok(found.map(|raw| sets::entry(kind, queue, raw, score_ms as f64)))
}

/// The first [`UNRECORDED_READ`] entries of the `kind` set of each of `queues`, in one
/// pipeline: where a jid without a record is looked for.
pub async fn unrecorded(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    queues: &[String],
) -> Result<Vec<SetEntry>> {
    let start = sets::Start {
        score: None,
        inclusive: true,
        skip: 0,
    };
    let starts: Vec<(&str, sets::Start)> = queues.iter().map(|q| (q.as_str(), start)).collect();
    let pages = sets::pages(conn, keys, kind, &starts, UNRECORDED_READ).await?;
    Ok(pages.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_record_leads_to_its_own_set_only() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_732_300_000_000);
        let dead = JobStatus::Dead {
            at,
            attempts: 3,
            error: "boom".into(),
        };
        assert_eq!(score_in(SetKind::Dead, &dead), Some(1_732_300_000_000));
        assert_eq!(score_in(SetKind::Retry, &dead), None);
        let dropped = JobStatus::Expired {
            at,
            attempts: 0,
            deadline: at,
            kept: false,
        };
        assert_eq!(score_in(SetKind::Dead, &dropped), None);
        let due = JobStatus::Scheduled { at };
        assert_eq!(score_in(SetKind::Scheduled, &due), Some(1_732_300_000_000));
        let asleep = JobStatus::Suspended {
            until: at,
            reason: "sleep 1".into(),
        };
        assert_eq!(
            score_in(SetKind::Scheduled, &asleep),
            Some(1_732_300_000_000)
        );
        assert_eq!(score_in(SetKind::Dead, &JobStatus::Queued), None);
    }
}
