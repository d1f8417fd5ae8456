//! Server middleware: tower layers around each job run (see `gator_core::middleware` for the
//! model, the order, and client middleware).
//!
//! Add a [`tower::Layer`] over [`JobService`] with [`WorkerBuilder::layer`], or an async fn
//! with [`from_fn`]:
//!
//! ```no_run
//! use gator_worker::Worker;
//! use gator_worker::middleware::{Next, from_fn};
//! use gator_core::middleware::{DispatchMiddleware, JobRun};
//!
//! # fn demo() -> Result<(), gator_worker::BuildError> {
//! let worker = Worker::builder()
//!     .layer(from_fn(|run: JobRun, next: Next| async move {
//!         let tenant = run.headers().get("tenant").cloned();
//!         let started = std::time::Instant::now();
//!         let result = next.run(run).await;
//!         println!("tenant {tenant:?}: {:?} in {:?}", result.is_ok(), started.elapsed());
//!         result
//!     }))
//!     .build()?;
//! # Ok(()) }
//! ```
//!
//! A worker without layers runs each job as before: no service, no allocation per job. With
//! layers, each run is one boxed call through the stack. A panic in a middleware is the job's
//! failure, recorded with its reason, as a panic in the job is.
//!
//! [`WorkerBuilder::layer`]: crate::WorkerBuilder::layer

use gator_core::JobError;
use gator_core::middleware::{DispatchMiddleware, JobRun};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tower::util::BoxCloneSyncService;
use tower::{Layer, Service, ServiceExt};

/// The service a layer wraps: a job run in, the job's result (its JSON result, if any) out.
pub type JobService = BoxCloneSyncService<JobRun, Option<String>, JobError>;

type Wrap = Arc<dyn Fn(JobService) -> JobService + Send + Sync>;

/// The middleware a worker was given: layers around each job run, and client middleware for
/// the client it connects itself.
#[derive(Clone, Default)]
pub(crate) struct Middleware {
    pub(crate) layers: Layers,
    pub(crate) dispatch: Vec<Arc<dyn DispatchMiddleware>>,
}

impl fmt::Debug for Middleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Middleware")
            .field("layers", &self.layers)
            .field("dispatch", &self.dispatch.len())
            .finish()
    }
}

/// The layers a worker was given, outermost first.
#[derive(Clone, Default)]
pub(crate) struct Layers(Vec<Wrap>);

impl fmt::Debug for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} layers", self.0.len())
    }
}

impl Layers {
    pub(crate) fn push<L>(&mut self, layer: L)
    where
        L: Layer<JobService> + Send + Sync + 'static,
        L::Service: Service<JobRun, Response = Option<String>, Error = JobError>
            + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as Service<JobRun>>::Future: Send + 'static,
    {
        self.0
            .push(Arc::new(move |inner| JobService::new(layer.layer(inner))));
    }

    /// The whole stack around the job's own run, or `None` without layers (the plain path).
    pub(crate) fn service(&self) -> Option<JobService> {
        if self.0.is_empty() {
            return None;
        }
        let innermost = JobService::new(tower::service_fn(|run: JobRun| run.run()));
        Some(
            self.0
                .iter()
                .rev()
                .fold(innermost, |inner, wrap| wrap(inner)),
        )
    }
}

/// Runs `run` through `service`: a panic in a middleware is the job's failure.
pub(crate) async fn call(mut service: JobService, run: JobRun) -> gator_core::JobResult {
    let through = async move {
        service.ready().await?;
        service.call(run).await
    };
    crate::run::catch_unwind(through)
        .await
        .unwrap_or_else(|panic| {
            Err(JobError::new(format!(
                "job middleware panicked: {}",
                crate::run::panic_message(&*panic)
            )))
        })
}

/// The rest of the stack, for a [`from_fn`] middleware: `next.run(run).await` runs the job
/// (through the layers inside this one) and returns its result.
pub struct Next {
    inner: JobService,
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Next")
    }
}

impl Next {
    /// Runs the job through the rest of the stack.
    pub async fn run(mut self, run: JobRun) -> gator_core::JobResult {
        self.inner.ready().await?;
        self.inner.call(run).await
    }
}

/// A layer made from an async fn of the run and the [`Next`] service, as axum's
/// `middleware::from_fn`: the fn may act before and after `next.run(run)`, change nothing, or
/// return a result of its own without running the job.
pub fn from_fn<F, Fut>(f: F) -> FromFnLayer<F>
where
    F: Fn(JobRun, Next) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = gator_core::JobResult> + Send + 'static,
{
    FromFnLayer { f }
}

/// The layer [`from_fn`] makes.
#[derive(Clone)]
pub struct FromFnLayer<F> {
    f: F,
}

impl<F> fmt::Debug for FromFnLayer<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromFnLayer")
    }
}

impl<F: Clone> Layer<JobService> for FromFnLayer<F> {
    type Service = FromFn<F>;

    fn layer(&self, inner: JobService) -> FromFn<F> {
        FromFn {
            f: self.f.clone(),
            inner,
        }
    }
}

/// The service [`FromFnLayer`] makes.
#[derive(Clone)]
pub struct FromFn<F> {
    f: F,
    inner: JobService,
}

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromFn")
    }
}

impl<F, Fut> Service<JobRun> for FromFn<F>
where
    F: Fn(JobRun, Next) -> Fut,
    Fut: Future<Output = gator_core::JobResult> + Send + 'static,
{
    type Response = Option<String>;
    type Error = JobError;
    type Future = Pin<Box<dyn Future<Output = gator_core::JobResult> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), JobError>> {
        // The inner service is made ready by `Next::run`, when (and if) the fn calls it.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, run: JobRun) -> Self::Future {
        let next = Next {
            inner: self.inner.clone(),
        };
        Box::pin((self.f)(run, next))
    }
}
