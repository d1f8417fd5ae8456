//! How a running attempt is told to stop, and why: its timeout, `Client::cancel`, or the
//! worker's shutdown ([`CancelReason`]).

use super::Context;

impl Context {
    /// Whether this attempt should stop: its timeout passed, the job was cancelled
    /// (`Client::cancel`), or the worker's shutdown deadline
    /// came. A sync job checks it between units of work.
    pub fn is_cancelled(&self) -> bool {
        self.inner.attempt.is_cancelled() || self.inner.deadline.is_cancelled()
    }

    /// Resolves when this attempt should stop (see [`Context::is_cancelled`]). An async job
    /// awaits it beside its work (`tokio::select!`) to stop cleanly.
    pub async fn cancelled(&self) {
        tokio::select! {
            _ = self.inner.attempt.cancelled() => {}
            _ = self.inner.deadline.cancelled() => {}
        }
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

    /// Why this attempt was told to stop, if it was (see [`CancelReason`]). A job that stops
    /// for [`CancelReason::Shutdown`] is put back at the head of its queue whatever it
    /// returns, its attempt not counted; one cancelled by `Client::cancel` ends `cancelled`;
    /// one that timed out fails, and is retried as any failure.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        if self.inner.is_cancel_requested() {
            Some(CancelReason::Cancelled)
        } else if self.inner.attempt.is_cancelled() {
            Some(CancelReason::TimedOut)
        } else if self.inner.deadline.is_cancelled() {
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
