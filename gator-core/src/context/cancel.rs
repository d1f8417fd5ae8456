//! How a running attempt is told to stop, and why: its timeout, `Client::cancel`, or the
//! worker's shutdown ([`CancelReason`]); and whether the shutdown cut it short.
//!
//! A run is cut short by the shutdown when the job was told of it while it ran:
//! [`Context::cancelled`] resolved, or [`Context::is_cancelled`] or [`Context::cancel_reason`]
//! answered, because of the worker's shutdown deadline. Whatever it returns then, it goes back
//! to the head of its queue, unless it says it finished first
//! ([`Context::finished_despite_shutdown`]). A job that returns before it is told finished
//! before the shutdown reached it: it is done.

use super::Context;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a job learned of its worker's shutdown, and what it said back.
#[derive(Debug, Default)]
pub(super) struct Shutdown {
    /// The context told the job that the shutdown deadline came.
    told: AtomicBool,
    /// The job said its work is complete all the same.
    finished: AtomicBool,
}

impl Shutdown {
    /// A copy with the same flags (for a context changed while another clone exists).
    pub(super) fn copied(&self) -> Shutdown {
        Shutdown {
            told: AtomicBool::new(self.told.load(Ordering::Acquire)),
            finished: AtomicBool::new(self.finished.load(Ordering::Acquire)),
        }
    }
}

impl Context {
    /// Whether this attempt should stop: its timeout passed, the job was cancelled
    /// (`Client::cancel`), or the worker's shutdown deadline
    /// came. A sync job checks it between units of work.
    pub fn is_cancelled(&self) -> bool {
        self.inner.attempt.is_cancelled() || self.told_of_shutdown()
    }

    /// Resolves when this attempt should stop (see [`Context::is_cancelled`]). An async job
    /// awaits it beside its work (`tokio::select!`) to stop cleanly.
    pub async fn cancelled(&self) {
        tokio::select! {
            _ = self.inner.attempt.cancelled() => {}
            _ = self.inner.deadline.cancelled() => self.note_told(),
        }
    }

    /// Says that this attempt's work is complete although the worker's shutdown reached it
    /// while it ran (it saw [`Context::cancelled`] resolve, or [`Context::is_cancelled`] turn
    /// true, for [`CancelReason::Shutdown`]): if it then returns `Ok`, it is recorded done, not
    /// put back. Without it, a job told of the shutdown goes back to the head of its queue
    /// whatever it returns, its attempt not counted, because its work may be cut short.
    ///
    /// Call it only when the work really is complete (the last write committed, the mail
    /// sent): a job that stops halfway and says so loses the rest of its work. It changes
    /// nothing for a job that returns `Err` (put back all the same) or that the shutdown never
    /// reached (done anyway).
    ///
    /// ```no_run
    /// use gator_core::{Context, job};
    ///
    /// #[job]
    /// async fn import(ctx: Context, batch: u64) -> Result<(), String> {
    ///     tokio::select! {
    ///         _ = commit(batch) => Ok(()),
    ///         _ = ctx.cancelled() => {
    ///             if already_committed(batch).await {
    ///                 ctx.finished_despite_shutdown(); // done: no need to run again
    ///             }
    ///             Ok(()) // otherwise it goes back to its queue, and runs again
    ///         }
    ///     }
    /// }
    /// # async fn commit(_: u64) {}
    /// # async fn already_committed(_: u64) -> bool { true }
    /// ```
    pub fn finished_despite_shutdown(&self) {
        self.inner.shutdown.finished.store(true, Ordering::Release);
    }

    /// Whether the worker's shutdown cut this attempt short: it was told of it while it ran
    /// (see [`Context::finished_despite_shutdown`]) and did not say it finished. The worker
    /// reads it once the job returned: such a job goes back to the head of its queue whatever
    /// it returned, its attempt not counted.
    pub fn cut_short_by_shutdown(&self) -> bool {
        let shutdown = &self.inner.shutdown;
        shutdown.told.load(Ordering::Acquire) && !shutdown.finished.load(Ordering::Acquire)
    }

    /// Whether the shutdown deadline came; if it did, the job is told of it now.
    fn told_of_shutdown(&self) -> bool {
        let came = self.inner.deadline.is_cancelled();
        if came {
            self.note_told();
        }
        came
    }

    fn note_told(&self) {
        self.inner.shutdown.told.store(true, Ordering::Release);
    }

    /// Cancels this attempt: [`Context::cancelled`] resolves and [`Context::is_cancelled`] is
    /// true. The worker calls it when the attempt's timeout passes.
    pub fn cancel(&self) {
        self.inner.attempt.cancel();
    }

    /// Cancels the job itself, as `Client::cancel` asked: [`Context::cancelled`]
    /// resolves, and whatever the job returns, its worker records it cancelled and never
    /// retries it. The worker calls it within a second of the request.
    pub fn request_cancel(&self) {
        self.inner
            .cancel_requested
            .store(true, std::sync::atomic::Ordering::Release);
        self.inner.attempt.cancel();
    }

    /// Whether the job's cancellation was asked for ([`Context::request_cancel`]), as opposed
    /// to its attempt timing out or the worker shutting down.
    pub fn is_cancel_requested(&self) -> bool {
        self.inner.is_cancel_requested()
    }

    /// This context told, through [`Context::is_stopping`], when its worker begins to stop
    /// (`stopping` is cancelled then, before the shutdown deadline; the worker sets it).
    pub fn with_stopping(self, stopping: tokio_util::sync::CancellationToken) -> Context {
        self.changed(|inner| inner.stopping = Some(stopping))
    }

    /// Whether a job that can stop at a checkpoint should stop at its next one: its worker
    /// began to stop, the shutdown deadline came, or the attempt timed out. Unlike
    /// [`Context::is_cancelled`], asking does not count as being told of the shutdown (a job
    /// that saved its state and stops says so with [`crate::JobError::interrupted`]).
    pub fn is_stopping(&self) -> bool {
        self.inner.attempt.is_cancelled()
            || self.inner.deadline.is_cancelled()
            || self
                .inner
                .stopping
                .as_ref()
                .is_some_and(|stopping| stopping.is_cancelled())
    }

    /// Why this attempt was told to stop, if it was (see [`CancelReason`]). A job that stops
    /// for [`CancelReason::Shutdown`] is put back at the head of its queue whatever it
    /// returns (unless it says [`Context::finished_despite_shutdown`]), its attempt not
    /// counted; one cancelled by `Client::cancel` ends `cancelled`; one that timed out fails,
    /// and is retried as any failure.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        if self.inner.is_cancel_requested() {
            Some(CancelReason::Cancelled)
        } else if self.inner.attempt.is_cancelled() {
            Some(CancelReason::TimedOut)
        } else if self.told_of_shutdown() {
            Some(CancelReason::Shutdown)
        } else {
            None
        }
    }
}

/// Why a job's [`Context`] was cancelled ([`Context::cancel_reason`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// The worker is shutting down and its grace period ran out: the job is interrupted, not
    /// failed, and runs again from the start.
    Shutdown,
    /// `Client::cancel` asked for it: the job ends `cancelled`, never retried.
    Cancelled,
    /// The attempt ran past its timeout: a failure, retried by the job's policy.
    TimedOut,
}
