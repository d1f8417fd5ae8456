//! Judging and settling a job with a deadline ([`crate::expiry`]) at its start, in one script:
//! the script reads Redis's clock (`TIME`) itself and either settles the job as expired — out
//! of its in-flight list and recorded `expired` at the time judged, kept in the dead set
//! (`kill.lua`, its entry's error saying why) or dropped (`cancelled.lua`) — or records it
//! `running` since then and answers that it starts. Nothing can change between the decision
//! and its effect, so no job starts after its deadline by a race. Only jobs with a deadline
//! call it; a plain job starts as before.

use crate::error::Result;
use crate::store::dead::DeadCap;
use crate::store::fetched::{Fetched, Verdict};
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// The job to judge: its deadline (ms, Redis time), its failed attempts so far.
#[derive(Debug, Clone, Copy)]
pub struct Judged {
    /// Its deadline (ms, Redis time).
    pub deadline: u64,
    /// Its failed attempts so far (this start is attempt `attempts + 1`).
    pub attempts: u32,
}

impl Judged {
    /// The running record's tail after its time: `<attempt> <process id>`.
    fn running(&self, job: &Fetched) -> String {
        format!("{} {}", self.attempts.saturating_add(1), job.process)
    }
}

/// Judges `job` by its deadline and, if it has come, settles it into its queue's dead set as
/// `entry` (the payload with its error), recorded `expired <at> <attempts> <deadline> dead`
/// (`kill.lua`); `handoff` is a workflow step's end for its workflow, as a death's.
pub async fn kill(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    entry: &str,
    judged: Judged,
    cap: DeadCap,
    handoff: Option<&str>,
) -> Result<Verdict> {
    let tail = format!("{} dead", judged.deadline);
    let (deadline, running) = (judged.deadline.to_string(), judged.running(job));
    let expired = [tail.as_str(), deadline.as_str(), running.as_str()];
    super::inflight::kill_recording(conn, keys, job, entry, cap, handoff, expired).await
}

/// Judges `job` (jid `jid`) by its deadline and, if it has come, settles it without keeping
/// it: recorded `expired <at> <attempts> <deadline> drop` for `retention` (`cancelled.lua`).
pub async fn drop(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    job: &Fetched,
    (jid, judged): (&str, Judged),
    retention: Duration,
    handoff: Option<&str>,
) -> Result<Verdict> {
    let tail = format!("{} {} drop", judged.attempts, judged.deadline);
    let (deadline, running) = (judged.deadline.to_string(), judged.running(job));
    let judge = [deadline.as_str(), running.as_str()];
    let recorded = (("expired", tail.as_str()), judge);
    super::cancel::settle_judged(conn, keys, job, jid, retention, handoff, recorded).await
}
