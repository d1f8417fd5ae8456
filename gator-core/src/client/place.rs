//! Where and when a dispatched job goes, before it is stored: through the client middleware,
//! held to the payload limit, placed on a shard of its queue, and, for a job with time
//! windows, moved to its next opening.

use super::Client;
use crate::error::Result;
use crate::job::Encoded;
use crate::payload::Payload;

impl Client {
    /// `job`'s payload, on the shard of its queue it belongs to (see [`crate::shards`]).
    pub(crate) async fn placed(&self, job: Encoded) -> Result<Payload> {
        let mut placed = self.place(vec![job]).await?;
        Ok(placed.pop().expect("one payload per job"))
    }

    /// [`Client::placed`] for many jobs, each first through the client middleware: a refusal
    /// stores none of them.
    pub(crate) async fn place(&self, mut jobs: Vec<Encoded>) -> Result<Vec<Payload>> {
        self.stamp_deadlines(&mut jobs).await?;
        for job in &mut jobs {
            if !self.inner.middleware.is_empty() {
                self.inner.middleware.apply(&mut job.payload)?;
            }
            let bytes = crate::payload::limit::check(&job.payload, self.inner.max_payload)?;
            // The plain path pays this comparison only.
            if bytes > self.inner.compress_over {
                crate::payload::packed::pack(&mut job.payload);
            }
            if bytes > self.inner.aside_over {
                crate::payload::aside::choose(&mut job.payload, bytes, self.inner.aside_over);
            }
        }
        self.inner
            .shards
            .place(&mut self.connection(), self.keys(), jobs)
            .await
    }

    /// Writes each expiring job's deadline into its payload, on Redis's clock: an `expires_in`
    /// counts from Redis's `TIME`, read once for the batch, and only if a job needs it (see
    /// [`crate::expiry`]). A job without a deadline pays nothing.
    async fn stamp_deadlines(&self, jobs: &mut [Encoded]) -> Result<()> {
        let needs_now = jobs.iter().any(|job| {
            matches!(
                job.expiry,
                Some(crate::expiry::Expiry {
                    deadline: crate::expiry::Deadline::In(_),
                    ..
                })
            )
        });
        let now = if needs_now {
            self.redis_time().await?
        } else {
            0
        };
        for job in jobs {
            if let Some(expiry) = job.expiry {
                job.payload.expires_at = Some(crate::expiry::resolve(expiry.deadline, now));
                job.payload.on_expire =
                    (expiry.on_expire == crate::expiry::OnExpire::Drop).then_some(expiry.on_expire);
            }
        }
        Ok(())
    }

    /// For a job with time windows ([`PendingJob::windows`]): when it may start, on Redis's
    /// clock, if it is due at `due` (ms; now if `None`): `due` itself if that lies inside a
    /// window, else the next opening. `None` for a job without windows, or one due now inside
    /// a window. Costs a `TIME` call, for jobs with windows only.
    pub(crate) async fn window_start(
        &self,
        payload: &Payload,
        due: Option<u64>,
    ) -> Result<Option<u64>> {
        let Some(windows) = payload
            .flow
            .as_ref()
            .map(|flow| flow.parsed_windows())
            .transpose()?
            .flatten()
        else {
            return Ok(None);
        };
        let now = self.redis_time().await?;
        let due = due.unwrap_or(now).max(now);
        let start = i64::try_from(due)
            .ok()
            .and_then(|due| windows.next_start(due))
            .and_then(|start| u64::try_from(start).ok())
            .unwrap_or(due);
        Ok((start > now).then_some(start))
    }
}
