//! Enqueueing by wire name, for producers that are not in Rust (the HTTP API's
//! `POST /api/queues/{queue}/jobs`): the job need not be linked into this binary.

use crate::client::Client;
use crate::error::{Error, Result};
use crate::job::Encoded;
use crate::payload::Payload;
use crate::store::keys::validate_queue;
use crate::store::schedule::When;
use std::time::{Duration, SystemTime};

impl Client {
    /// Enqueues job `job` (its wire name) on `queue` with `args` (a JSON array, one element per
    /// parameter of the job fn), now or at `at` (on Redis's clock: a time past is now). Runs
    /// the client middleware as every dispatch does. Returns the jid.
    ///
    /// The name is not checked against a registry: the worker that runs it must know it, or
    /// the job fails with "no job named …" and is retried, then dead, with its payload kept.
    pub async fn enqueue_raw(
        &self,
        queue: &str,
        job: &str,
        args: serde_json::Value,
        at: Option<SystemTime>,
    ) -> Result<String> {
        let payload = self.raw_placed(queue, job, args).await?;
        match at {
            None => Ok(self.dispatch_placed(payload).await?.into_jid()),
            Some(at) => {
                let due = crate::job::DueTime::from(at).to_ms()?;
                let due = self.window_start(&payload, Some(due)).await?.unwrap_or(due);
                self.dispatch_at_ms(payload, due).await
            }
        }
    }

    /// [`Client::enqueue_raw`] after `delay`, counted on Redis's clock.
    pub async fn enqueue_raw_in(
        &self,
        queue: &str,
        job: &str,
        args: serde_json::Value,
        delay: Duration,
    ) -> Result<String> {
        let payload = self.raw_placed(queue, job, args).await?;
        let estimate = crate::payload::to_ms(crate::client::time_after(delay)?);
        Ok(self
            .schedule_placed(payload, When::In(delay), estimate)
            .await?
            .into_jid())
    }

    async fn raw_placed(&self, queue: &str, job: &str, args: serde_json::Value) -> Result<Payload> {
        validate_queue(queue)?;
        gator_rules::job_name(job).map_err(|reason| Error::InvalidJobName {
            name: crate::error::cut_name(job),
            reason,
        })?;
        if !args.is_array() {
            return Err(Error::InvalidArgs {
                reason: "args must be a JSON array, one element per parameter of the job".into(),
            });
        }
        self.placed(Encoded {
            payload: Payload::new(job, queue, args),
            shard_key: None,
        })
        .await
    }
}
