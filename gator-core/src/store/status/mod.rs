//! Job status records: one STRING per job, `<namespace>:{<queue>}:job:<jid>`, written in the
//! same script or `MULTI` as every change of the job's state, so it is the index
//! `Client::status` reads. A plain dispatch writes no record but a queued mark, a field of a
//! hash shared by up to 128 jobs (see `wire::jid`); the first record replaces it. Each change costs one `SET` (the prelude's `set_status` in
//! the scripts; the plain paths add it to their `MULTI`). Finished records expire: a success's
//! after the worker's retention (24 h by default), a dead job's with its dead-set entry.
//!
//! A record is `<state> <fields>`, space-separated, the free text (an error, a result) last:
//!
//! | record | state |
//! |---|---|
//! | `queued` | waiting in its queue |
//! | `queued <seq> <score> held <parking key>` (or `critical`) | parked under flow control, where `flow_lib.lua`'s `park` put it (read as `queued`; `store::position` finds its place) |
//! | `scheduled <due ms>` | in the scheduled set |
//! | `running <since ms> <attempt> <process>` | started by a worker process |
//! | `retrying <due ms> <attempt> <error>` | failed, in the retry set |
//! | `suspended <due ms> <reason>` | a durable job parked in the scheduled set until its time (`sleep 2`, `slice 3`) |
//! | `dead <at ms> <attempts> <error>` | in the dead set |
//! | `done <at ms> <attempts> <result JSON>` | succeeded (the result empty if it returned none) |
//! | `expired <at ms> <attempts> <deadline ms> <dead\|drop>` | not started by its deadline |

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::lease::millis;
use crate::wire::lifecycle::State;

mod read;
pub use read::{find, read, read_many};
use redis::aio::ConnectionLike;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where a job is in its life, as its status record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobStatus {
    /// Waiting in its queue (or parked under flow control) to be fetched.
    Queued,
    /// Waiting in the scheduled set until `at`.
    Scheduled {
        /// When it is due (Redis time).
        at: SystemTime,
    },
    /// Running in a worker process.
    Running {
        /// The worker process running it (`gator:process:<id>`).
        process: String,
        /// When it started (the worker's estimate of Redis time).
        since: SystemTime,
        /// Which attempt this is (1 for the first run).
        attempt: u32,
    },
    /// Failed, and runs again at `next_at`.
    Retrying {
        /// The attempts so far (1 after the first failure).
        attempt: u32,
        /// When it runs again (Redis time).
        next_at: SystemTime,
        /// Why the last attempt failed.
        error: String,
    },
    /// A durable job parked until `until` (`ctx.sleep`, or a slice yielded): it holds no
    /// worker, and resumes with what it saved (`context::durable`).
    Suspended {
        /// When it runs again (Redis time).
        until: SystemTime,
        /// Why: `sleep <n>` for its n-th sleep, `slice <n>` for its n-th slice yielded.
        reason: String,
    },
    /// In the dead set: it will not run again unless retried from there.
    Dead {
        /// When it died (Redis time).
        at: SystemTime,
        /// The attempts it had.
        attempts: u32,
        /// Why.
        error: String,
    },
    /// Succeeded.
    Done {
        /// When it finished (Redis time).
        finished_at: SystemTime,
        /// The attempts it took (1 if the first run succeeded).
        attempts: u32,
    },
    /// Given up by its retry strategy (`RetryDecision::Discard`): not kept in the dead set.
    Discarded {
        /// When (Redis time).
        at: SystemTime,
        /// The attempts it had.
        attempts: u32,
        /// Why its last attempt failed.
        error: String,
    },
    /// Its attempt ended waiting for the reply to `key` (`ctx.await_reply`), until `deadline`.
    AwaitingReply {
        /// The correlation key.
        key: String,
        /// When the wait times out (Redis time, as the job's queue's node counts it).
        deadline: SystemTime,
    },
    /// Cancelled (`Client::cancel`): removed before it ran, or stopped while it ran.
    /// It will not run again.
    Cancelled {
        /// When it was cancelled (Redis time).
        at: SystemTime,
    },
    /// Not started by its deadline ([`crate::expiry`]): it never ran, and will not run
    /// unless retried from the dead set.
    Expired {
        /// When it was found expired (Redis time).
        at: SystemTime,
        /// The attempts it had (failed ones, before a retry that came too late).
        attempts: u32,
        /// Its deadline (Redis time).
        deadline: SystemTime,
        /// Whether it is kept in its queue's dead set (else it was dropped:
        /// `on_expire = "drop"`).
        kept: bool,
    },
    /// No record: never dispatched, deleted, or finished longer ago than the retention.
    Unknown,
}

impl JobStatus {
    /// The state the record says ([`State`], the lifecycle's one state type); `None` without
    /// a record.
    pub fn state(&self) -> Option<State> {
        Some(match self {
            JobStatus::Queued => State::Queued,
            JobStatus::Scheduled { .. } => State::Scheduled,
            JobStatus::Running { .. } => State::Running,
            JobStatus::Retrying { .. } => State::Retrying,
            JobStatus::Dead { .. } => State::Dead,
            JobStatus::Done { .. } => State::Done,
            JobStatus::Cancelled { .. } => State::Cancelled,
            JobStatus::Discarded { .. } => State::Discarded,
            JobStatus::Expired { .. } => State::Expired,
            JobStatus::AwaitingReply { .. } => State::Awaiting,
            JobStatus::Suspended { .. } => State::Suspended,
            JobStatus::Unknown => return None,
        })
    }

    /// The state's name, as the CLI and the records spell it (`queued`, `running`, ...), or
    /// `unknown` without a record.
    pub fn name(&self) -> &'static str {
        self.state().map_or("unknown", State::name)
    }

    /// Whether the job will not change state again by itself (done, dead, discarded,
    /// cancelled or expired).
    pub fn is_final(&self) -> bool {
        self.state().is_some_and(State::is_final)
    }
}

/// A status record read back: the status, and the result a success stored (JSON text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The job's status.
    pub status: JobStatus,
    /// What the job returned, as JSON, if it succeeded and returned a value.
    pub result: Option<String>,
}

impl Record {
    /// Parses a stored record; a record this version cannot read is [`JobStatus::Unknown`].
    pub fn parse(text: &str) -> Record {
        let mut fields = text.splitn(2, ' ');
        let state = fields.next().unwrap_or("");
        let rest = fields.next().unwrap_or("");
        let (first, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let ms = first.parse::<u64>().ok().map(from_ms);
        // Every state with a time has a count next (attempt or attempts), then its free text.
        let (count, tail) = rest.split_once(' ').unwrap_or((rest, ""));
        let count = count.parse::<u32>().unwrap_or(0);
        let mut result = None;
        let status = match (state, ms) {
            ("queued", _) => JobStatus::Queued,
            ("scheduled", Some(at)) => JobStatus::Scheduled { at },
            ("suspended", Some(until)) => JobStatus::Suspended {
                until,
                reason: rest.to_owned(),
            },
            ("running", Some(since)) => JobStatus::Running {
                process: tail.to_owned(),
                since,
                attempt: count,
            },
            ("retrying", Some(next_at)) => JobStatus::Retrying {
                attempt: count,
                next_at,
                error: tail.to_owned(),
            },
            ("dead", Some(at)) => JobStatus::Dead {
                at,
                attempts: count,
                error: tail.to_owned(),
            },
            ("cancelled", Some(at)) => JobStatus::Cancelled { at },
            ("discarded", Some(at)) => JobStatus::Discarded {
                at,
                attempts: count,
                error: tail.to_owned(),
            },
            // `expired <at> <attempts> <deadline> <dead|drop>`.
            ("expired", Some(at)) => {
                let (deadline, fate) = tail.split_once(' ').unwrap_or((tail, ""));
                JobStatus::Expired {
                    at,
                    attempts: count,
                    deadline: from_ms(deadline.parse().unwrap_or(0)),
                    kept: fate != "drop",
                }
            }
            // `awaiting <deadline> <key>`: the key is all the rest, spaces and all.
            ("awaiting", Some(deadline)) => JobStatus::AwaitingReply {
                key: rest.to_owned(),
                deadline,
            },
            ("done", Some(finished_at)) => {
                result = (!tail.is_empty()).then(|| tail.to_owned());
                JobStatus::Done {
                    finished_at,
                    attempts: count,
                }
            }
            _ => JobStatus::Unknown,
        };
        Record { status, result }
    }
}

fn from_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// The jid of a payload as stored: read from its start when Gator wrote it (`{"jid":"…"`),
/// else decoded. `None` for text that is not a payload with a jid.
pub fn jid_of(raw: &[u8]) -> Option<String> {
    jid_in(raw).map(std::borrow::Cow::into_owned)
}

/// [`jid_of`], borrowed from `raw` when Gator wrote it (a success's settle reads one per job).
pub fn jid_in(raw: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    const START: &[u8] = b"{\"jid\":\"";
    if let Some(rest) = raw.strip_prefix(START)
        && let Some(end) = rest.iter().position(|b| *b == b'"' || *b == b'\\')
        && rest.get(end) == Some(&b'"')
    {
        return std::str::from_utf8(&rest[..end])
            .ok()
            .map(std::borrow::Cow::Borrowed);
    }
    #[derive(serde::Deserialize)]
    struct WithJid {
        jid: String,
    }
    let decoded = serde_json::from_slice::<WithJid>(raw).ok();
    decoded.map(|w| std::borrow::Cow::Owned(w.jid))
}

/// What a success records beside settling the job: its result and how long the record is kept.
#[derive(Debug, Clone, Copy)]
pub struct Done<'a> {
    /// What the job returned, as JSON (`None` for nothing, or `()`).
    pub result: Option<&'a str>,
    /// The attempts it took (1 if the first run succeeded).
    pub attempts: u32,
    /// When it finished: the worker's estimate of Redis time, ms (scripts take Redis's own).
    pub at_ms: u64,
    /// How long the record (and the result) is kept.
    pub retention: Duration,
    /// Whether the job's key may hold an earlier record of this attempt (its `running` record:
    /// a job with a deadline is recorded running as it starts, any job once it has run 100 ms):
    /// its success deletes it. Otherwise a jid that names a bucket has no key record to
    /// delete: every `queued` record of one is its mark.
    pub keyed: bool,
}

impl Done<'_> {
    /// The record after its time, `<attempts> <result>`: the scripts put `done <now> ` before
    /// it, on Redis's clock.
    pub fn tail(&self) -> String {
        format!("{} {}", self.attempts, self.result.unwrap_or(""))
    }

    /// The whole record, `done <at> <attempts> <result>`, at the worker's estimate of Redis
    /// time (for the plain path's `MULTI`).
    pub fn record(&self) -> String {
        format!("done {} {}", self.at_ms, self.tail())
    }
}

/// The record of a job that started: `running <since> <attempt> <process>`.
pub fn running_record(since_ms: u64, attempt: u32, process: &str) -> String {
    format!("running {since_ms} {attempt} {process}")
}

/// Marks `jid` of `queue` as running in `process` since `since_ms`.
pub async fn mark_running(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
    process: &str,
    attempt: u32,
    since_ms: u64,
) -> Result<()> {
    redis::cmd("SET")
        .arg(keys.job(queue, jid))
        .arg(running_record(since_ms, attempt, process))
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// How long a success's record is kept by default: a day, as Sidekiq Pro and BullMQ keep
/// finished jobs' traces about that long.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 3600);

/// The `PX` argument for `retention`, at least 1 ms (Redis refuses 0).
pub fn retention_ms(retention: Duration) -> u64 {
    millis(retention).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written() {
        let at = from_ms(1_700_000_000_000);
        assert_eq!(Record::parse("queued").status, JobStatus::Queued);
        let parked = Record::parse("queued 7 27487790694407 held acme\u{1f}api");
        assert_eq!((parked.status, parked.result), (JobStatus::Queued, None));
        assert_eq!(
            Record::parse("scheduled 1700000000000").status,
            JobStatus::Scheduled { at }
        );
        assert_eq!(
            Record::parse(&running_record(1_700_000_000_000, 2, "host:1:ab")).status,
            JobStatus::Running {
                process: "host:1:ab".into(),
                since: at,
                attempt: 2
            }
        );
        assert_eq!(
            Record::parse("retrying 1700000000000 3 connection refused: port 25").status,
            JobStatus::Retrying {
                attempt: 3,
                next_at: at,
                error: "connection refused: port 25".into()
            }
        );
        assert_eq!(
            Record::parse("dead 1700000000000 26 bad input").status,
            JobStatus::Dead {
                at,
                attempts: 26,
                error: "bad input".into()
            }
        );
        let done = |result| Done {
            result,
            attempts: 3,
            at_ms: 1_700_000_000_000,
            retention: DEFAULT_RETENTION,
            keyed: false,
        };
        let record = Record::parse(&done(Some("{\"id\": 7}")).record());
        assert_eq!(
            record.status,
            JobStatus::Done {
                finished_at: at,
                attempts: 3
            }
        );
        assert_eq!(record.result.as_deref(), Some("{\"id\": 7}"));
        assert_eq!(Record::parse(&done(None).record()).result, None);
        assert_eq!(Record::parse("exploded 12").status, JobStatus::Unknown);
    }

    #[test]
    fn a_jid_is_read_from_the_start_or_decoded() {
        assert_eq!(
            jid_of(br#"{"jid":"abc","job":"x"}"#).as_deref(),
            Some("abc")
        );
        assert_eq!(
            jid_of(br#"{"job":"x","jid":"def"}"#).as_deref(),
            Some("def")
        );
        assert_eq!(
            jid_of(br#"{"jid":"a\"b","job":"x"}"#).as_deref(),
            Some("a\"b")
        );
        assert_eq!(jid_of(b"not json"), None);
    }
}
