//! A job's life by its jid, as its client reads it: its status record, the value it returned,
//! waiting for it to finish, and who holds a unique key's lock.

use super::Client;
use crate::error::{Error, Result};
use crate::status::{JobDetails, JobStatus};
use crate::store;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// How long [`Client::wait_for`] sleeps between looks at first, and at most: short enough that
/// a quick job is seen finished within a few milliseconds, long enough that a long wait costs
/// Redis a GET every quarter second.
const FIRST_LOOK: Duration = Duration::from_millis(5);
const LONGEST_LOOK: Duration = Duration::from_millis(250);

impl Client {
    /// Everything the status record of job `jid` says, with the queue it was found in; `None`
    /// if no known queue has one. (For `gator-worker job show`.)
    pub async fn job_details(&self, jid: &str) -> Result<Option<JobDetails>> {
        let Some((queue, record)) = self.find_record(jid).await? else {
            return Ok(None);
        };
        let progress =
            store::progress::read(&mut self.connection(), self.keys(), &queue, jid).await?;
        Ok(Some(JobDetails {
            queue,
            status: record.status,
            result: record.result,
            progress,
        }))
    }

    /// The last progress job `jid` reported with `ctx.progress` (fraction, note, when on
    /// Redis's clock, attempt), while it runs and for a day after its last report; `None` if
    /// it reported none. Finds its queue as [`Client::status`] does, then one GET.
    pub async fn progress(&self, jid: &str) -> Result<Option<crate::status::Progress>> {
        let Some((queue, _)) = self.find_record(jid).await? else {
            return Ok(None);
        };
        store::progress::read(&mut self.connection(), self.keys(), &queue, jid).await
    }

    /// Where job `jid` is in its life: queued, scheduled, running, retrying, dead, done, or
    /// unknown (never dispatched, deleted, or finished longer ago than the worker's
    /// `--retention`, 24 h by default). Looks in every known queue, in one pipeline; use
    /// [`Client::status_in`] when the queue is known.
    pub async fn status(&self, jid: &str) -> Result<JobStatus> {
        Ok(self
            .find_record(jid)
            .await?
            .map_or(JobStatus::Unknown, |(_, record)| record.status))
    }

    /// [`Client::status`] of a job of `queue`: one GET.
    pub async fn status_in(&self, queue: &str, jid: &str) -> Result<JobStatus> {
        crate::store::keys::validate_queue(queue)?;
        let record = store::status::read(&mut self.connection(), self.keys(), queue, jid).await?;
        Ok(record.map_or(JobStatus::Unknown, |record| record.status))
    }

    /// The value job `jid` returned (`Ok(value)` of a job fn returning `Result<T, E>`), once it
    /// is done; `None` while it is not done, if it returned `()`, or once its record expired.
    /// An error if the stored value is not a `T`.
    pub async fn result<T: DeserializeOwned>(&self, jid: &str) -> Result<Option<T>> {
        let Some((_, record)) = self.find_record(jid).await? else {
            return Ok(None);
        };
        match record.result {
            Some(json) if matches!(record.status, JobStatus::Done { .. }) => {
                Ok(Some(serde_json::from_str(&json)?))
            }
            _ => Ok(None),
        }
    }

    /// Waits until job `jid` is done or dead, up to `timeout`, and returns that status
    /// ([`JobStatus::Done`] or [`JobStatus::Dead`]); read its value with [`Client::result`].
    /// Looks at its status record after 5 ms, then at growing intervals up to 250 ms (one GET
    /// per look once its queue is known). [`Error::WaitTimedOut`] if it is still on its way.
    pub async fn wait_for(&self, jid: &str, timeout: Duration) -> Result<JobStatus> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut queue: Option<String> = None;
        let mut pause = FIRST_LOOK;
        loop {
            let status = match &queue {
                Some(queue) => self.status_in(queue, jid).await?,
                None => match self.find_record(jid).await? {
                    Some((found, record)) => {
                        queue = Some(found);
                        record.status
                    }
                    None => JobStatus::Unknown,
                },
            };
            if status.is_final() {
                return Ok(status);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Err(Error::WaitTimedOut {
                    jid: jid.to_owned(),
                    state: status.name(),
                    waited: timeout,
                });
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(LONGEST_LOOK);
        }
    }

    /// The record of `jid` and its queue, looked for in every known queue and every shard of
    /// a sharded one (see [`crate::shards`]).
    pub(super) async fn find_record(
        &self,
        jid: &str,
    ) -> Result<Option<(String, store::status::Record)>> {
        let mut queues = self.known_queues().await?;
        for (queue, count) in self.shard_counts().await? {
            queues.extend((0..count).map(|n| crate::shards::shard_queue(&queue, n)));
        }
        queues.sort_unstable();
        queues.dedup();
        store::status::find(&mut self.connection(), self.keys(), &queues, jid).await
    }
    /// The jid of the job holding unique key `key`'s lock on `queue`, if any: for a job
    /// dispatched without a key of its own, `key` is [`crate::unique::default_key`] of its wire name and args.
    pub async fn unique_holder(&self, queue: &str, key: &str) -> Result<Option<String>> {
        store::keys::validate_queue(queue)?;
        store::unique::holder(&mut self.connection(), self.keys(), queue, key).await
    }
}
