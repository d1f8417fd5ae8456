//! Running a job body where it belongs (a blocking thread for sync jobs, in place for async
//! ones), and catching panics, so that one job's panic is its own failure and never the
//! processor's.

use crate::fetcher::Slot;
use gator_core::{Context as JobContext, Execution, JobError, JobResult};
use std::future::Future;
use std::task::{Context, Poll};
use std::time::Duration;

/// Runs a job body, turning a panic into a failure. Past `timeout` the job's context is
/// cancelled and the attempt fails: an async job is dropped; a sync job's thread cannot be
/// stopped, so it runs on (it sees `ctx.is_cancelled()`) with its result ignored, and it keeps
/// `slot` until it ends: the worker never runs more than `--concurrency` bodies at once.
pub async fn execute(
    execution: Execution,
    timeout: Option<Duration>,
    slot: &Slot,
    ctx: &JobContext,
) -> JobResult {
    let outcome = match execution {
        Execution::Blocking(body) => {
            let slot = slot.clone();
            let handle = tokio::task::spawn_blocking(move || {
                let _slot = slot; // given back when the body returns, however late
                body()
            });
            let joined = match timeout {
                None => handle.await,
                Some(limit) => match tokio::time::timeout(limit, handle).await {
                    Ok(joined) => joined,
                    Err(_) => return Err(timed_out(limit, ctx)),
                },
            };
            joined.map_err(|e| {
                if e.is_panic() {
                    e.into_panic()
                } else {
                    Box::new(e.to_string())
                }
            })
        }
        // Run in place, not as a task of its own: no spawn and no cross-task wake-up per job.
        Execution::Async(body) => match timeout {
            None => catch_unwind(body).await,
            Some(limit) => match tokio::time::timeout(limit, catch_unwind(body)).await {
                Ok(outcome) => outcome,
                Err(_) => return Err(timed_out(limit, ctx)), // dropping the future cancels the job
            },
        },
    };
    outcome.unwrap_or_else(|panic| {
        Err(JobError::new(format!(
            "job panicked: {}",
            panic_message(&*panic)
        )))
    })
}

fn timed_out(limit: Duration, ctx: &JobContext) -> JobError {
    ctx.cancel();
    JobError::new(format!("job timed out after {limit:?}"))
}

/// Runs `future`, turning a panic into an `Err` with the panic's payload: see [`CatchUnwind`].
pub fn catch_unwind<F: Future>(future: F) -> CatchUnwind<F> {
    CatchUnwind { future }
}

pin_project_lite::pin_project! {
    /// A future that runs `future` in place and turns a panic into an `Err` with the panic's
    /// payload. A struct, not an `async fn`: an `async fn` keeps its argument and its pinned
    /// copy both in its state, so the future (kilobytes for an attempt or a settle) was
    /// copied once more per job, and the state it lives in was twice its size.
    pub struct CatchUnwind<F> {
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.project().future;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// The text of a panic's payload.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<String>() {
        return s.clone();
    }
    panic.downcast_ref::<&str>().map_or_else(
        || "(non-string panic payload)".to_owned(),
        |s| (*s).to_owned(),
    )
}
