//! The writes at a job's start, before it runs: a job with a deadline judged and, if it has
//! come, settled as expired in one script; a unique job's lock released as it starts.

use super::{Fetched, Judged, Settler, Verdict};
use tracing::warn;

/// How a job whose deadline has come ends.
#[derive(Debug, Clone, Copy)]
pub enum Expiry<'a> {
    /// Kept in the dead set as `entry` (its payload with the reason).
    Dead {
        /// The dead-set entry.
        entry: &'a str,
    },
    /// Dropped: recorded `expired`, not kept; `jid` names its record.
    Drop {
        /// The job's jid.
        jid: &'a str,
    },
}

impl Settler {
    /// Judges `job` by its deadline on Redis's clock and, if it has come, settles it as
    /// `expiry` says, with `handoff` (a workflow step's end) in the same script; in time, it
    /// is recorded running. Nothing can change between the judgement and its effect.
    pub async fn judge(
        &self,
        job: &Fetched,
        (expiry, judged): (Expiry<'_>, Judged),
        handoff: Option<&str>,
    ) -> gator_core::Result<Verdict> {
        let mut settle = super::handle(&self.client);
        match expiry {
            Expiry::Dead { entry } => {
                let cap = self.kept.dead_cap;
                settle.expire_kill(job, (entry, judged), cap, handoff).await
            }
            Expiry::Drop { jid } => {
                let retention = self.kept.retention;
                settle
                    .expire_drop(job, (jid, judged), retention, handoff)
                    .await
            }
        }
    }

    /// Releases the unique lock of a job that holds it until it starts. A lock that cannot
    /// be released now is only logged: its TTL ends it, and the job runs all the same.
    pub async fn release_unique(&self, job: &Fetched) {
        if let Err(e) = super::handle(&self.client).release_unique(job).await {
            warn!(error = %e, "could not release the job's unique lock as it starts; its TTL will");
        }
    }
}
