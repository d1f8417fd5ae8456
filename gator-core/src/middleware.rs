//! Middleware: your code around every dispatch and every job run, as Sidekiq's client and
//! server middleware.
//!
//! - **Client middleware** ([`DispatchMiddleware`], added with
//!   `ClientBuilder::middleware`) sees each job a client is
//!   about to store, whatever the path (`dispatch`, `dispatch_at`/`_in`, `dispatch_many`, each
//!   step of a chain or workflow): it may change the payload (add a tenant id to its
//!   [`headers`](crate::payload::Payload::headers)) or refuse it, and then nothing is stored and the
//!   dispatch returns [`Error::Rejected`](crate::error::Error::Rejected).
//! - **Server middleware** wraps each job run in a worker. It is a
//!   [`tower::Layer`](https://docs.rs/tower) over a `tower::Service<JobRun>` (added with
//!   `gator_worker::WorkerBuilder::layer`), or an async fn given to
//!   `gator_worker::middleware::from_fn`: it sees the job's [`Context`] and headers before the
//!   run, can set up and restore what the run needs (a span, a tenant, a timer), see its result,
//!   or not run the job at all.
//!
//! **Order.** Client middleware runs in the order it was added, each seeing what the ones
//! before it changed. Server layers nest as `tower::ServiceBuilder`'s do: the first added is the
//! outermost, so it runs first before the job and last after it.
//!
//! **Why two shapes.** A job run is one request with one response, and wrapping it is what
//! tower's `Layer`/`Service` model; apalis uses it the same way, so existing tower middleware
//! (timeouts, concurrency limits, metrics) fits. A dispatch is not one request: one call may
//! store a job, a batch, a chain or a workflow, each by its own atomic script, and what client
//! middleware needs is to change or refuse each job before that script runs, in the
//! dispatching task. A small trait says exactly that.
//!
//! **Built-ins.** With the `otel` feature, every client adds `gator_core::otel::TracePropagation`
//! first, which records the current span's trace context as a `traceparent`
//! header; the worker makes the job's span its child. Unique jobs are not middleware: taking a
//! unique lock must be one script with the enqueue, so it lives in that script.
//!
//! ```
//! use gator_core::middleware::DispatchMiddleware;
//! use gator_core::Payload;
//!
//! /// Stamps every job with the tenant it was dispatched for, and refuses jobs without one.
//! struct Tenant(Option<String>);
//!
//! impl DispatchMiddleware for Tenant {
//!     fn dispatch(&self, job: &mut Payload) -> Result<(), String> {
//!         let tenant = self.0.clone().ok_or("no tenant is set for this request")?;
//!         job.headers.insert("tenant".into(), tenant);
//!         Ok(())
//!     }
//! }
//! ```

use crate::context::Context;
use crate::job::JobResult;
use crate::payload::{Headers, Payload};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Client middleware: called for each job a `Client` is about to store.
/// Return `Err(reason)` to refuse it: the dispatch fails with
/// [`Error::Rejected`](crate::error::Error::Rejected) and nothing of it (nor of the batch, chain or
/// workflow it belongs to) is stored.
pub trait DispatchMiddleware: Send + Sync + 'static {
    /// Sees, and may change, `job` before it is stored. Its queue may be changed too (to a
    /// valid queue name); its jid may not.
    fn dispatch(&self, job: &mut Payload) -> Result<(), String>;
}

impl<F> DispatchMiddleware for F
where
    F: Fn(&mut Payload) -> Result<(), String> + Send + Sync + 'static,
{
    fn dispatch(&self, job: &mut Payload) -> Result<(), String> {
        self(job)
    }
}

/// The client middleware of one client, in the order they run.
#[derive(Clone, Default)]
pub(crate) struct DispatchChain(Vec<Arc<dyn DispatchMiddleware>>);

impl fmt::Debug for DispatchChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} dispatch middleware", self.0.len())
    }
}

impl DispatchChain {
    pub(crate) fn push(&mut self, middleware: Arc<dyn DispatchMiddleware>) {
        self.0.push(middleware);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Runs every middleware on `job`, in order; the first refusal stops it.
    pub(crate) fn apply(&self, job: &mut Payload) -> crate::error::Result<()> {
        let jid = job.jid.clone();
        for middleware in &self.0 {
            middleware
                .dispatch(job)
                .map_err(|reason| crate::error::Error::Rejected {
                    job: job.job.clone(),
                    reason,
                })?;
        }
        // The jid names the job's status record and what the caller was told: it stays.
        job.jid = jid;
        crate::store::keys::validate_queue(&job.queue)
    }
}

/// One run of a job, as server middleware sees it: the job's [`Context`] (jid, name, queue,
/// attempt, [headers](Context::headers), state) and the run itself, which the innermost
/// service starts ([`JobRun::run`]). A middleware that never passes it on has the job not run:
/// its own result is the job's.
pub struct JobRun {
    ctx: Context,
    body: Pin<Box<dyn Future<Output = JobResult> + Send + 'static>>,
}

impl fmt::Debug for JobRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobRun")
            .field("jid", &self.ctx.jid())
            .field("job", &self.ctx.job_name())
            .field("queue", &self.ctx.queue())
            .field("attempt", &self.ctx.attempt())
            .finish()
    }
}

impl JobRun {
    /// A run of the job of `ctx`, whose body is `body` (the worker makes these).
    pub fn new(ctx: Context, body: impl Future<Output = JobResult> + Send + 'static) -> JobRun {
        JobRun {
            ctx,
            body: Box::pin(body),
        }
    }

    /// The job's context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The headers the job was dispatched with.
    pub fn headers(&self) -> &Headers {
        self.ctx.headers()
    }

    /// Runs the job (with its timeout and panic boundary): what the innermost service does.
    pub fn run(self) -> impl Future<Output = JobResult> + Send + 'static {
        self.body
    }
}
