//! The stages of a dispatch before it is stored, in order: the client middleware, the payload
//! held to its limit and encoded (packed, or its arguments set aside), placed on a shard of its
//! queue, and given the time it is due there (a job with time windows moved to its next
//! opening). What comes out, [`Placed`], is only stored (`send.rs`): nothing here calls back.

use super::Client;
use super::engine::Due;
use crate::error::Result;
use crate::job::Encoded;
use crate::payload::Payload;
use crate::store::schedule::When;

/// A job ready to store: its payload, placed, and when it is due on its queue.
#[derive(Debug)]
pub(crate) struct Placed {
    pub(crate) payload: Payload,
    /// `None`: due now, on its queue's list.
    pub(crate) later: Option<Later>,
}

/// Who is placing a job: a dispatch, or the outbox relay ([`crate::outbox`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// A dispatch: through the client middleware, large arguments set aside.
    Dispatch,
    /// The relay of a sealed job: its middleware ran when it was sealed; stored whole.
    Relay,
}

/// When a job that is not due now is due.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Later {
    pub(crate) when: When,
    /// When its payload says it became due (ms, Redis time): `when` itself, or for a delay
    /// the estimate on this host's clock (Redis's clock decides; this is only recorded).
    pub(crate) due_ms: u64,
}

impl Client {
    /// `job` through every stage, due `due`.
    pub(crate) async fn place_one(&self, job: Encoded, due: Due) -> Result<Placed> {
        let mut placed = self.place(vec![job]).await?;
        let payload = placed.pop().expect("one payload per job");
        let later = self.later(&payload, due).await?;
        Ok(Placed { payload, later })
    }

    /// Many jobs through every stage, each due now (or at its next opening): their payloads,
    /// and beside them when each is due if not now. Every decision is made before anything is
    /// stored; the payloads stay in the one `Vec` they were placed in (a bulk dispatch of
    /// 100,000 jobs moved each payload once more when they were paired up here).
    pub(crate) async fn place_all(
        &self,
        jobs: Vec<Encoded>,
    ) -> Result<(Vec<Payload>, Vec<Option<Later>>)> {
        let payloads = self.place(jobs).await?;
        let mut later = Vec::with_capacity(payloads.len());
        for payload in &payloads {
            later.push(self.later(payload, Due::Now).await?);
        }
        Ok((payloads, later))
    }

    /// Jobs through the client middleware, their payload limit and encoding, and onto a shard
    /// of their queues: a refusal of any stores none of them.
    pub(crate) async fn place(&self, jobs: Vec<Encoded>) -> Result<Vec<Payload>> {
        self.place_as(jobs, Stage::Dispatch).await
    }

    /// [`Client::place`] at `stage`: a job the outbox relays went through its middleware when
    /// it was sealed, and is stored whole (`relay_push.lua` writes no side key).
    pub(crate) async fn place_as(
        &self,
        mut jobs: Vec<Encoded>,
        stage: Stage,
    ) -> Result<Vec<Payload>> {
        self.stamp_deadlines(&mut jobs).await?;
        let aside_over = match stage {
            Stage::Dispatch => self.inner.aside_over,
            Stage::Relay => usize::MAX,
        };
        for job in &mut jobs {
            if stage == Stage::Dispatch && !self.inner.middleware.is_empty() {
                self.inner.middleware.apply(&mut job.payload)?;
            }
            let bytes = crate::payload::limit::check(&job.payload, self.inner.max_payload)?;
            // The plain path pays this comparison only.
            if bytes > self.inner.compress_over {
                crate::payload::packed::pack(&mut job.payload);
            }
            if bytes > aside_over {
                crate::payload::aside::choose(&mut job.payload, bytes, aside_over);
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

    /// When `payload`, dispatched due `due`, is due on its queue: `None` for now. A time
    /// outside the job's windows moves to the next opening after it; a delay counts on
    /// Redis's clock. The plain path (due now, no windows) costs nothing.
    pub(crate) async fn later(&self, payload: &Payload, due: Due) -> Result<Option<Later>> {
        let at = |ms: u64| Later {
            when: When::At(ms),
            due_ms: ms,
        };
        Ok(match due {
            Due::Now => self.window_start(payload, None).await?.map(at),
            Due::At(ms) => Some(at(self
                .window_start(payload, Some(ms))
                .await?
                .unwrap_or(ms))),
            Due::In(delay) if has_windows(payload) => {
                // Counted from Redis's clock, then moved to the next opening if outside one.
                let ms = self.redis_time().await? + crate::store::lease::millis(delay);
                Some(at(self
                    .window_start(payload, Some(ms))
                    .await?
                    .unwrap_or(ms)))
            }
            Due::In(delay) => Some(Later {
                when: When::In(delay),
                due_ms: crate::payload::to_ms(crate::horizon::time_after(delay)?),
            }),
        })
    }

    /// For a job with time windows ([`PendingJob::windows`]): when it may start, on Redis's
    /// clock, if it is due at `due` (ms; now if `None`): `due` itself if that lies inside a
    /// window, else the next opening. `None` for a job without windows, or one due now inside
    /// a window. Costs a `TIME` call, for jobs with windows only.
    ///
    /// [`PendingJob::windows`]: crate::PendingJob::windows
    async fn window_start(&self, payload: &Payload, due: Option<u64>) -> Result<Option<u64>> {
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

/// Whether `payload` starts only inside time windows.
fn has_windows(payload: &Payload) -> bool {
    payload.flow.as_ref().is_some_and(|f| !f.windows.is_empty())
}
