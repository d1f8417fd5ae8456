//! The durable job's calls on its [`Context`]: checkpoint and resume, steps that run once,
//! and sleeps that park the job.

use super::MAX_SLEEPS;
use super::{Suspension, Wake};
use crate::context::Context;
use crate::failure::JobError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use std::any::Any;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

impl Context {
    /// The job's last checkpoint ([`Context::checkpoint`]), saved by this run or an earlier
    /// one (after a kill, a shutdown, a retry, a sleep): `None` on its first run, or if the
    /// checkpoint does not read as an `S`. Read from the payload the worker fetched: no
    /// round trip.
    pub fn resume<S: DeserializeOwned>(&self) -> Option<S> {
        let mut data = self.durable_slot().data();
        let saved = data.saved().ok()?;
        let checkpoint = saved.checkpoint.as_ref()?;
        match serde_json::from_str(checkpoint.get()) {
            Ok(state) => Some(state),
            Err(e) => {
                tracing::warn!(error = %e, "the job's checkpoint does not read as the type asked for: it starts afresh");
                None
            }
        }
    }

    /// Saves `state` as the job's checkpoint: every later run of this job starts with it
    /// ([`Context::resume`]). Written into the job's payload in flight, in one script checked
    /// against this worker's lease, so work repeated after a crash is what ran since the last
    /// checkpoint. At most [`super::MAX_CHECKPOINT_BYTES`] of JSON.
    pub async fn checkpoint<S: Serialize + ?Sized>(&self, state: &S) -> Result<(), JobError> {
        self.refuse_after_suspension()?;
        let value = to_raw(state, "the checkpoint")?;
        let next = {
            let mut data = self.durable_slot().data();
            data.saved()?
                .with_checkpoint(value)
                .map_err(JobError::discard)?
        };
        self.save(next).await
    }

    /// Runs `work` once for this job: the first time it succeeds its result is saved with the
    /// job, and every later run of the job (a retry, a resume after a sleep or a crash) gets
    /// the saved result back without running `work`. A step that fails fails the attempt
    /// (its error is the job's, under its retry policy), and the steps after it do not run.
    /// Name each step of a job differently; at most [`super::MAX_STEPS`] steps and
    /// [`super::MAX_STEPS_BYTES`] of results a job.
    ///
    /// Should the process die after `work`'s side effect and before its result is written,
    /// `work` runs again: make it idempotent where that matters (an idempotency key).
    pub async fn step<T, E, F, Fut>(&self, name: &str, work: F) -> Result<T, JobError>
    where
        T: Serialize + DeserializeOwned,
        E: fmt::Display + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        self.refuse_after_suspension()?;
        crate::wire::durable::check_step_name(name).map_err(JobError::discard)?;
        if let Some(stored) = self.saved_step(name)? {
            return serde_json::from_str(&stored).map_err(|e| {
                JobError::discard(format!(
                    "step {name:?}'s saved result does not read back: {e}"
                ))
            });
        }
        let value = work().await.map_err(into_job_error)?;
        let raw = to_raw(&value, "the step's result")?;
        let next = {
            let mut data = self.durable_slot().data();
            data.saved()?
                .with_step(name, raw)
                .map_err(JobError::discard)?
        };
        self.save(next).await?;
        Ok(value)
    }

    /// Ends this run and parks the job for `duration` (on Redis's clock): it holds no
    /// processor, no concurrency unit and no rate-limit token while it sleeps, and its next
    /// run replays its steps' results and checkpoint and returns from this call at once.
    /// Always `?` it: the `Err` it returns is what ends the run. Sleeps are matched by the
    /// order they are called in, so call them in the same order on every run.
    pub async fn sleep(&self, duration: Duration) -> Result<(), JobError> {
        if duration > crate::horizon::SCHEDULE_HORIZON {
            return Err(JobError::discard(format!(
                "a sleep of {duration:?} is past the 5-year horizon"
            )));
        }
        self.suspend_for(Wake::In(duration))
    }

    /// [`Context::sleep`] until `at`. A time already past parks the job for a moment.
    pub async fn sleep_until(&self, at: SystemTime) -> Result<(), JobError> {
        let ms = at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        crate::horizon::check_due_ms(ms).map_err(|e| JobError::discard(e.to_string()))?;
        self.suspend_for(Wake::At(at))
    }

    /// A sleep: `Ok` if this run's sleep of that order was slept already; else the
    /// suspension is recorded for the worker and the run is told to end.
    fn suspend_for(&self, wake: Wake) -> Result<(), JobError> {
        self.refuse_after_suspension()?;
        let mut data = self.durable_slot().data();
        let slept = data.saved()?.sleeps;
        let order = data.sleeps_seen;
        data.sleeps_seen += 1;
        if order < slept {
            return Ok(());
        }
        if slept >= MAX_SLEEPS {
            return Err(JobError::discard(format!(
                "a job may sleep at most {MAX_SLEEPS} times"
            )));
        }
        let mut next = data.saved()?.clone();
        next.sleeps = slept + 1;
        let payload = data.rewritten(&next).unwrap_or_default();
        data.suspension = Some(Suspension {
            payload,
            wake,
            reason: format!("sleep {}", slept + 1),
        });
        Err(JobError::new(format!(
            "the job sleeps (sleep {})",
            slept + 1
        )))
    }

    /// Waits for the reply to `key` (`Client::reply`, from any process) as a step: the first
    /// time, this run ends and the job waits, holding no worker, its status `suspended` (reason
    /// `reply <key>`) for up to `timeout`; when the reply comes, the job runs again and this
    /// call returns the reply (saved as step `reply:<key>`, so later runs get it too). With no
    /// reply in time, the attempt fails with a timeout and the job's retry policy applies (its
    /// next attempt waits again). Always `?` it: the `Err` it returns is what ends the run.
    pub async fn wait_for_reply<T: DeserializeOwned>(
        &self,
        key: &str,
        timeout: Duration,
    ) -> Result<T, JobError> {
        self.refuse_after_suspension()?;
        // The key is checked where the wait is written (the worker's classify, which fails a
        // bad one), not here: the reply room stands above the context.
        let name = format!("reply:{key}");
        if let Some(reply) = self.saved_step(&name)? {
            return serde_json::from_str(&reply).map_err(|e| {
                JobError::discard(format!(
                    "the reply to {key:?} does not read as the type asked for: {e}"
                ))
            });
        }
        let mut request = crate::context::AwaitReply::new(key.to_owned(), timeout, None);
        request.resume = true;
        self.set_await(request);
        Err(JobError::new(format!(
            "the job waits for the reply to {key:?}"
        )))
    }

    /// Records that this run ends yielding its slice ([`Context::iterate`]): back to its
    /// queue now, with what it saved, its attempt not counted.
    pub(super) fn yield_slice(&self) -> Result<(), JobError> {
        let mut data = self.durable_slot().data();
        let mut next = data.saved()?.clone();
        next.slices += 1;
        let payload = data.rewritten(&next).unwrap_or_default();
        data.suspension = Some(Suspension {
            payload,
            wake: Wake::In(Duration::ZERO),
            reason: format!("slice {}", next.slices),
        });
        Ok(())
    }

    /// The saved result of step `name` (JSON), if it succeeded in an earlier run.
    fn saved_step(&self, name: &str) -> Result<Option<String>, JobError> {
        let mut data = self.durable_slot().data();
        Ok(data.saved()?.step(name).map(|v| v.get().to_owned()))
    }

    fn refuse_after_suspension(&self) -> Result<(), JobError> {
        if self.is_suspending() {
            return Err(JobError::new(
                "the job asked to be suspended: this run ends, nothing more is saved in it",
            ));
        }
        Ok(())
    }
}

/// `value` as JSON text, or why it cannot be saved.
fn to_raw<S: Serialize + ?Sized>(value: &S, what: &str) -> Result<Box<RawValue>, JobError> {
    serde_json::value::to_raw_value(value)
        .map_err(|e| JobError::discard(format!("{what} does not serialize: {e}")))
}

/// A step's error as the job's failure: a [`JobError`] as it is, anything else by its message.
pub(super) fn into_job_error<E: fmt::Display + 'static>(error: E) -> JobError {
    match (&error as &dyn Any).downcast_ref::<JobError>() {
        Some(job_error) => job_error.clone(),
        None => JobError::new(format!("{error:#}")),
    }
}
