//! A running job's progress: one STRING per job that reported any,
//! `<namespace>:{<queue>}:progress:<jid>` = `<fraction> <at ms> <attempt> <note>`, written by
//! `progress.lua` on Redis's clock. A job that never reports has no key, and no path of the
//! dispatch, fetch or settle reads or writes one. The record is kept after the job ends (the
//! last value stays readable beside the job's finished record) and expires on its own
//! [`KEPT`] after its last write, as a success's record does by default.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a progress record is kept after its last write: a day, the default retention of
/// a success's record.
pub const KEPT: Duration = Duration::from_secs(24 * 3600);

/// A job's last reported progress, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How much is done, from 0 to 1.
    pub fraction: f64,
    /// When it was written (Redis's clock).
    pub at: SystemTime,
    /// The attempt that reported it.
    pub attempt: u32,
    /// What the job said with it (empty if nothing).
    pub note: String,
}

impl Progress {
    /// Parses a stored record; `None` if this version cannot read it.
    pub fn parse(text: &str) -> Option<Progress> {
        let mut fields = text.splitn(4, ' ');
        let fraction = fields.next()?.parse::<f64>().ok()?;
        let at_ms = fields.next()?.parse::<u64>().ok()?;
        let attempt = fields.next()?.parse::<u32>().ok()?;
        Some(Progress {
            fraction,
            at: UNIX_EPOCH + Duration::from_millis(at_ms),
            attempt,
            note: fields.next().unwrap_or("").to_owned(),
        })
    }
}

/// Records `fraction` (0 to 1, checked by the caller) and `note` (cut by the caller,
/// `context::MAX_NOTE`) as the progress of attempt `attempt` of `jid` on `queue`: one `progress.lua`.
/// Returns the time written (Redis's clock, ms).
pub async fn write(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
    report: (f64, u32, &str),
) -> Result<u64> {
    let (fraction, attempt, note) = report;
    let at = scripts::PROGRESS
        .key(keys.progress(queue, jid))
        .arg(fraction.to_string())
        .arg(attempt)
        .arg(note)
        .arg(KEPT.as_millis() as u64)
        .invoke_async::<u64>(conn)
        .await?;
    Ok(at)
}

/// The last progress `jid` of `queue` reported, if any (one `GET`).
pub async fn read(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
) -> Result<Option<Progress>> {
    let text: Option<String> = redis::cmd("GET")
        .arg(keys.progress(queue, jid))
        .query_async(conn)
        .await?;
    Ok(text.as_deref().and_then(Progress::parse))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_with_its_note() {
        let p = Progress::parse("0.25 1700000000000 2 page 3 of 12").unwrap();
        assert_eq!(p.fraction, 0.25);
        assert_eq!(p.at, UNIX_EPOCH + Duration::from_millis(1_700_000_000_000));
        assert_eq!(p.attempt, 2);
        assert_eq!(p.note, "page 3 of 12");
        assert_eq!(Progress::parse("1 5 1 ").unwrap().note, "");
        assert_eq!(Progress::parse("half 5 1 x"), None);
    }
}
