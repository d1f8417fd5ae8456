//! Step 2, gate: what must not run now, whoever asks. A payload no worker could run goes to
//! the dead set unrun; a job cancelled before it started, past its deadline (expired), or
//! outside its time windows, is settled as such.

use super::{Early, Processor};
use crate::door::{Judged, Verdict};
use crate::fetcher::Job;
use crate::outcome::{Failure, Outcome, Policy};
use crate::settle::start::Expiry;
use gator_core::expiry::OnExpire;
use gator_core::payload::PayloadDocument;
use std::time::Duration;

/// How long a job with a deadline goes back for when Redis's clock cannot be read at its
/// start: it is not run unchecked, and Redis is likely away for about this long anyway.
const CLOCK_UNREAD: Duration = Duration::from_secs(1);
use tracing::{info, warn};

impl Processor {
    /// Step 2, gate: what no worker could run goes to the dead set unrun, kept as it came; a job
    /// cancelled before it started (parked on a controlled queue, or fetched as the cancel
    /// came) is settled as such; a job whose time window closed while it waited goes to the
    /// next one. None of them runs. A job with a deadline that is in time starts: its start
    /// (ms, Redis time) is returned.
    pub(super) async fn gate(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
    ) -> Result<Option<u64>, Early> {
        if let Some(reason) = self.unrunnable(doc, job) {
            return Err(Early::Failed(Failure::Unrunnable(reason), Policy::DEFAULT));
        }
        if self.cancels.is_marked(doc.jid()) {
            info!("job cancelled before it started");
            return Err(Early::Outcome(self.cancelled(doc)));
        }
        // A job judged in time is recorded running; a step after that turns it back (its
        // windows, a hand-back) records where it goes instead.
        let started = self.expired(doc, job).await.map_err(Early::Outcome)?;
        match self.outside_window(doc).await {
            Some(outcome) => Err(Early::Outcome(outcome)),
            None => Ok(started),
        }
    }

    /// Why no worker could run this payload, if none could: over the size limit (pushed by
    /// a producer that does not check it), or a job name with control, invisible or
    /// bidirectional characters, which no `#[job]` can have.
    pub(super) fn unrunnable(&self, doc: &PayloadDocument<'_>, job: &Job) -> Option<String> {
        let (bytes, max) = (job.fetched.raw.len(), self.client.max_payload());
        if bytes > max {
            return Some(format!(
                "the payload is {bytes} bytes, over this worker's limit of {max} \
                 (--max-payload, GATOR_MAX_PAYLOAD): not run"
            ));
        }
        gator_rules::job_name(doc.job()).err().map(|problem| {
            let name = gator_rules::cut(doc.job(), 100);
            format!(
                "invalid job name \"{}\": it {problem}; not run",
                gator_rules::escape(&name)
            )
        })
    }

    /// For a job with a deadline ([`gator_core::expiry`]): judged on Redis's clock and, if it
    /// has come, settled as expired, in one script (`Settler::judge`), whatever
    /// it waited in (its queue, the scheduled or retry set, a controlled queue's parking): then
    /// `Err(Expired)`, not run. In time, it is recorded running, and `Ok(Some(start))` (ms, Redis
    /// time). A job without one pays nothing: `Ok(None)`. If Redis cannot be asked, the job is
    /// not run either: it goes back for [`CLOCK_UNREAD`], and the next start asks again.
    pub(super) async fn expired(
        &self,
        doc: &PayloadDocument<'_>,
        job: &Job,
    ) -> Result<Option<u64>, Outcome> {
        let Some(deadline) = doc.expires_at_ms() else {
            return Ok(None);
        };
        let retention = self.settler.kept().retention;
        let handoff = crate::door::handoff_on_end(doc.text(), "dead", retention);
        let judged = Judged {
            deadline,
            attempts: doc.attempt(),
        };
        let entry = match doc.on_expire() {
            OnExpire::Dead => Some(self.expired_entry(doc)),
            OnExpire::Drop => None,
        };
        let expiry = match &entry {
            Some(entry) => Expiry::Dead { entry },
            None => Expiry::Drop { jid: doc.jid() },
        };
        let verdict = self
            .settler
            .judge(&job.fetched, (expiry, judged), handoff.as_deref())
            .await;
        after_judging(verdict, deadline, handoff)
    }

    /// The dead-set entry of a job kept once expired: its payload with the reason, stamped
    /// with this worker's estimate of Redis time (its record holds the time judged).
    fn expired_entry(&self, doc: &PayloadDocument<'_>) -> String {
        let reason = serde_json::Value::from(gator_core::expiry::REASON).to_string();
        let now = self.clock.now_ms().to_string();
        doc.rewrite(&[("error", reason), ("failed_at", now)])
    }

    /// `Some(Reschedule)` if the job has time windows and Redis's clock is outside them (a
    /// job that waited past its window's close is not run late). Only jobs with windows pay
    /// for the `TIME` call. If Redis cannot be asked, the job runs: it was admitted, and its
    /// dispatch put it inside a window.
    pub(super) async fn outside_window(&self, doc: &PayloadDocument<'_>) -> Option<Outcome> {
        let windows = doc.windows()?;
        let now = match self.client.redis_time().await {
            Ok(now) => now,
            Err(e) => {
                warn!(error = %e, "cannot read Redis's clock to check the job's time windows; running it");
                return None;
            }
        };
        let next = windows.next_start(i64::try_from(now).ok()?)?;
        let delay = u64::try_from(next).ok()?.checked_sub(now)?;
        if delay == 0 {
            return None;
        }
        info!(
            delay_ms = delay,
            "outside the job's time windows: rescheduled to the next opening"
        );
        Some(Outcome::Reschedule {
            delay: Duration::from_millis(delay),
        })
    }
}

/// What the gate makes of the script's `verdict` on a job with `deadline` (ms): in time, its
/// start; expired, settled already, with `handoff` left to carry on; no answer, put back for
/// [`CLOCK_UNREAD`].
fn after_judging(
    verdict: gator_core::Result<Verdict>,
    deadline: u64,
    handoff: Option<String>,
) -> Result<Option<u64>, Outcome> {
    match verdict {
        Ok(Verdict::InTime { at_ms }) => Ok(Some(at_ms)),
        Ok(Verdict::Expired(killed)) => {
            info!(
                deadline_ms = deadline,
                "job expired before it started: not run"
            );
            Err(Outcome::Expired {
                settled: killed.settled,
                handoff,
                orphaned_chains: killed.orphaned_chains,
            })
        }
        Err(e) => {
            warn!(error = %e, "cannot read Redis's clock to check the job's deadline; putting it back");
            Err(Outcome::Reschedule {
                delay: CLOCK_UNREAD,
            })
        }
    }
}
