//! Iteration over a cursor, as Sidekiq's iterable jobs do: [`Context::iterate`] runs the job's
//! `each` item by item from its last saved cursor, saves the cursor as its checkpoint every so
//! many items or so much time, and stops at a checkpoint when the job must make room: its time
//! slice is over (it goes back to its queue, its attempt not counted), its worker is stopping
//! (it is put back with its cursor), or it was cancelled.

use crate::context::Context;
use crate::failure::JobError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt;
use std::time::{Duration, Instant};

/// What one item of an iteration says comes next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next<C> {
    /// Go on from this cursor.
    Continue(C),
    /// Nothing is left: the iteration is complete.
    Done,
}

/// How an iteration saves its cursor and shares its worker ([`Context::iterate_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iteration {
    every_items: u64,
    every: Duration,
    max_slice: Duration,
}

impl Default for Iteration {
    /// The cursor saved every second (and at every stop), a slice of 5 minutes.
    fn default() -> Iteration {
        Iteration {
            every_items: u64::MAX,
            every: Duration::from_secs(1),
            max_slice: Duration::from_secs(300),
        }
    }
}

impl Iteration {
    /// Saves the cursor after every `items` items (1: after each), besides the time bound.
    pub fn checkpoint_every_items(mut self, items: u64) -> Iteration {
        self.every_items = items.max(1);
        self
    }

    /// Saves the cursor when `every` has passed since the last save (the default is a
    /// second): work repeated after a crash is at most what ran in that time.
    pub fn checkpoint_every(mut self, every: Duration) -> Iteration {
        self.every = every;
        self
    }

    /// After running `max_slice` (the default is 5 minutes), the job saves its cursor and
    /// goes back to its queue, its attempt not counted, so that other jobs, a deploy and a
    /// shutdown never wait hours behind it.
    pub fn max_slice(mut self, max_slice: Duration) -> Iteration {
        self.max_slice = max_slice;
        self
    }
}

/// Why an iteration stops before it is done.
enum Stop {
    Slice,
    TimedOut,
    Stopping,
    Cancelled,
}

impl Context {
    /// [`Context::iterate_with`] with the default [`Iteration`]: the cursor saved every second,
    /// a slice of 5 minutes.
    pub async fn iterate<C, E, F, Fut>(&self, start: C, each: F) -> Result<(), JobError>
    where
        C: Serialize + DeserializeOwned + Clone,
        E: fmt::Display + 'static,
        F: FnMut(C) -> Fut,
        Fut: Future<Output = Result<Next<C>, E>>,
    {
        self.iterate_with(Iteration::default(), start, each).await
    }

    /// Runs `each` item by item, each call given the cursor to work from (the saved cursor
    /// when the job resumes, else `start`) and saying the next cursor, until it says
    /// [`Next::Done`]. The cursor is the job's checkpoint ([`Context::checkpoint`]), saved as
    /// `plan` says, whenever the iteration stops early, and at its end (the cursor that said
    /// `Done`, if items ran since the last save), so that a later run of the job, after a
    /// sleep or a retry, finds the iteration done. It stops early, at its next
    /// item, when its slice is over (`Ok` is not returned: the job goes back to its queue and
    /// resumes from the cursor), when its worker is stopping (put back with its cursor) or
    /// when it was cancelled. Always `?` its result. Report progress from `each` with
    /// [`Context::progress`] if the cursor says how far it is.
    pub async fn iterate_with<C, E, F, Fut>(
        &self,
        plan: Iteration,
        start: C,
        mut each: F,
    ) -> Result<(), JobError>
    where
        C: Serialize + DeserializeOwned + Clone,
        E: fmt::Display + 'static,
        F: FnMut(C) -> Fut,
        Fut: Future<Output = Result<Next<C>, E>>,
    {
        let mut cursor = self.resume::<C>().unwrap_or(start);
        let began = Instant::now();
        let (mut saved_at, mut unsaved) = (Instant::now(), 0u64);
        loop {
            match each(cursor.clone())
                .await
                .map_err(super::api::into_job_error)?
            {
                // Saved if items ran since the last save: else a later run of the job (after
                // a sleep or a failure that follows the iteration) would run them again.
                Next::Done if unsaved > 0 => return self.checkpoint(&cursor).await,
                Next::Done => return Ok(()),
                Next::Continue(next) => cursor = next,
            }
            unsaved += 1;
            let stop = self.iteration_stop(began, plan.max_slice);
            if stop.is_some() || unsaved >= plan.every_items || saved_at.elapsed() >= plan.every {
                self.checkpoint(&cursor).await?;
                (saved_at, unsaved) = (Instant::now(), 0);
            }
            match stop {
                None => {}
                Some(Stop::Slice) => {
                    self.yield_slice()?;
                    return Err(JobError::new(
                        "the job yielded its slice: it goes on from its cursor",
                    ));
                }
                Some(Stop::Stopping) => {
                    return Err(JobError::interrupted(
                        "the worker is stopping: the job goes on from its cursor",
                    ));
                }
                Some(Stop::TimedOut) => {
                    return Err(JobError::new(
                        "the attempt timed out: the next one goes on from the cursor",
                    ));
                }
                Some(Stop::Cancelled) => return Err(JobError::discard("the job was cancelled")),
            }
        }
    }

    /// Whether the iteration must stop at this item, and why.
    fn iteration_stop(&self, began: Instant, max_slice: Duration) -> Option<Stop> {
        if self.is_cancel_requested() {
            Some(Stop::Cancelled)
        } else if self.inner.attempt.is_cancelled() {
            Some(Stop::TimedOut)
        } else if self.is_stopping() {
            Some(Stop::Stopping)
        } else if began.elapsed() >= max_slice {
            Some(Stop::Slice)
        } else {
            None
        }
    }
}
