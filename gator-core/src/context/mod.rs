//! What a running job may know and reach besides its arguments: its [`Context`] (jid, attempt,
//! queue, times, chain, cancellation) and the application's [`State`].
//!
//! Neither is part of the wire format: a `#[job]` fn that takes `ctx: Context` or
//! `State(db): State<Db>` is dispatched with its other parameters only, and the worker supplies
//! these at run time.

mod awaits;
mod cancel;
pub mod durable;
mod progress;
mod state;

pub use progress::{
    MAX_NOTE, PERIOD, ProgressReport, ProgressSink, ProgressWriter, WRITES_PER_SECOND,
};

pub use awaits::AwaitReply;
pub use cancel::CancelReason;

pub use state::{State, StateMap, StateNeed};

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// The running attempt of a job, as a `#[job]` fn sees it when it takes `ctx: Context` (in any
/// position; it is not one of the job's wire arguments). Cheap to clone.
///
/// ```no_run
/// use gator_core::{Context, job};
///
/// #[job(timeout = "5m")]
/// async fn export(ctx: Context, report: u64) -> Result<(), std::io::Error> {
///     for page in 0.. {
///         if ctx.is_cancelled() {
///             // The attempt timed out or the worker's shutdown deadline came: stop cleanly.
///             return Err(std::io::Error::other(format!("stopped at page {page}")));
///         }
///         println!("{} attempt {}: report {report}, page {page}", ctx.jid(), ctx.attempt());
///         # break;
///     }
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    job: JobInfo,
    states: StateMap,
    /// Cancelled at this attempt's timeout.
    attempt: CancellationToken,
    /// Cancelled at the worker's shutdown deadline; shared by every attempt of the worker.
    deadline: CancellationToken,
    /// For a workflow step: the workflow id and the step's parents.
    workflow: Option<(String, Vec<Parent>)>,
    /// Set when the job's cancellation was asked for (`Client::cancel`).
    cancel_requested: std::sync::atomic::AtomicBool,
    /// Whether the job was told of its worker's shutdown, and whether it said it finished.
    shutdown: cancel::Shutdown,
    /// What `await_reply` asked for, taken by the worker once the job returns.
    await_reply: std::sync::Mutex<Option<AwaitReply>>,
    /// For a handler job: the reply it was pushed with (JSON).
    reply: Option<String>,
    /// The headers the job was dispatched with.
    headers: crate::payload::Headers,
    /// Its progress reports, and where they go (see `progress`).
    progress: progress::Slot,
    /// For a job with a deadline: its start as judged on Redis's clock (ms).
    started_at_ms: Option<u64>,
    /// What a durable job saved, and where it saves (`durable`); made at the first use for
    /// a context the worker did not give one.
    durable: std::sync::OnceLock<Arc<durable::Slot>>,
    /// Cancelled when the worker begins to stop (before its shutdown deadline).
    stopping: Option<CancellationToken>,
}

/// Who a job is, as read from its payload: what a [`Context`] is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// The job id.
    pub jid: String,
    /// The wire name.
    pub job_name: String,
    /// The list the job was fetched from (a queue, or a shard of one: `default#3`).
    pub queue: String,
    /// This attempt's number: 1 for the first run.
    pub attempt: u32,
    /// When the job was first dispatched, in ms since the Unix epoch.
    pub created_at_ms: u64,
    /// When it was last put on its queue, in ms since the Unix epoch.
    pub enqueued_at_ms: u64,
    /// The id of the chain it is a step of.
    pub chain_id: Option<String>,
}

/// One parent of a workflow step, as its [`Context`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    /// The parent's jid.
    pub jid: String,
    /// Its job's wire name.
    pub job: String,
    /// What it returned (JSON); `None` if it returned nothing, or died and the workflow went
    /// on without it (`OnFailure::Continue`).
    pub result: Option<String>,
}

impl Context {
    /// A context for one attempt of `job`, with the application's `states`, cancelled by
    /// [`Context::cancel`] or when `deadline` is. The worker makes one per attempt; tests may
    /// make their own to call a job fn directly.
    pub fn new(job: JobInfo, states: StateMap, deadline: CancellationToken) -> Context {
        Context {
            inner: Arc::new(Inner {
                job,
                states,
                attempt: CancellationToken::new(),
                deadline,
                workflow: None,
                cancel_requested: std::sync::atomic::AtomicBool::new(false),
                shutdown: cancel::Shutdown::default(),
                await_reply: std::sync::Mutex::new(None),
                reply: None,
                headers: crate::payload::Headers::new(),
                progress: progress::Slot::default(),
                started_at_ms: None,
                durable: std::sync::OnceLock::new(),
                stopping: None,
            }),
        }
    }

    /// This context for a step of workflow `id` whose parents are `parents` (the worker reads
    /// them from the workflow before the step runs).
    pub fn with_workflow(self, id: String, parents: Vec<Parent>) -> Context {
        self.changed(|inner| inner.workflow = Some((id, parents)))
    }

    /// This context for a handler job pushed with `reply` (JSON): see [`Context::reply`].
    pub fn with_reply(self, reply: String) -> Context {
        self.changed(|inner| inner.reply = Some(reply))
    }

    /// The reply a handler job was dispatched with (JSON), if it is one.
    pub(crate) fn reply_text(&self) -> Option<&str> {
        self.inner.reply.as_deref()
    }

    /// This context with the headers the job was dispatched with (see [`Context::header`]).
    pub fn with_headers(self, headers: crate::payload::Headers) -> Context {
        if headers.is_empty() {
            return self;
        }
        self.changed(|inner| inner.headers = headers)
    }

    /// The header `name` the job was dispatched with (set by client middleware, see
    /// `middleware`), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.inner.headers.get(name).map(String::as_str)
    }

    /// This context for a job with a deadline judged in time at `at_ms` (Redis time): see
    /// [`Context::started_at`].
    pub fn with_started_at(self, at_ms: u64) -> Context {
        self.changed(|inner| inner.started_at_ms = Some(at_ms))
    }

    /// For a job with a deadline (`expires_in`): when its worker judged it in time and started
    /// it, on Redis's clock, the instant the deadline was compared with. `None` for a job
    /// without a deadline (the worker does not read the clock for it).
    pub fn started_at(&self) -> Option<SystemTime> {
        self.inner.started_at_ms.map(from_ms)
    }

    /// Every header the job was dispatched with.
    pub fn headers(&self) -> &crate::payload::Headers {
        &self.inner.headers
    }

    /// This context with `change` made: in place while no clone of it exists (the worker
    /// builds it before the job runs), else on a copy.
    fn changed(self, change: impl FnOnce(&mut Inner)) -> Context {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            job: shared.job.clone(),
            states: shared.states.clone(),
            attempt: shared.attempt.clone(),
            deadline: shared.deadline.clone(),
            workflow: shared.workflow.clone(),
            cancel_requested: std::sync::atomic::AtomicBool::new(shared.is_cancel_requested()),
            shutdown: shared.shutdown.copied(),
            await_reply: std::sync::Mutex::new(None),
            reply: shared.reply.clone(),
            headers: shared.headers.clone(),
            progress: progress::Slot::with_writer(shared.progress.writer()),
            started_at_ms: shared.started_at_ms,
            durable: shared.durable.clone(),
            stopping: shared.stopping.clone(),
        });
        change(&mut inner);
        Context {
            inner: Arc::new(inner),
        }
    }

    /// The id of the workflow this job is a step of, if it is one.
    pub fn workflow_id(&self) -> Option<&str> {
        self.inner.workflow.as_ref().map(|(id, _)| id.as_str())
    }

    /// The steps this workflow step ran after, with their results (empty for a job that is
    /// not a workflow step, or a first step). Read them typed with
    /// [`Context::parent_result`] and [`Context::parent_results`].
    pub fn parents(&self) -> &[Parent] {
        self.inner
            .workflow
            .as_ref()
            .map_or(&[], |(_, parents)| parents.as_slice())
    }

    /// The job id.
    pub fn jid(&self) -> &str {
        &self.inner.job.jid
    }

    /// The job's wire name (`send_email`, or its `name = ".."`).
    pub fn job_name(&self) -> &str {
        &self.inner.job.job_name
    }

    /// The queue the job was fetched from: the queue's name even when it came from one of
    /// its shards (see [`Context::shard_queue`]).
    pub fn queue(&self) -> &str {
        crate::wire::shards::logical_queue(&self.inner.job.queue)
    }

    /// The list the job was fetched from: `default#3` for shard 3 of a sharded queue
    /// `default`, otherwise the queue's name.
    pub fn shard_queue(&self) -> &str {
        &self.inner.job.queue
    }

    /// This attempt's number: 1 on the first run, 2 on the first retry, and so on.
    pub fn attempt(&self) -> u32 {
        self.inner.job.attempt
    }

    /// When the job was first dispatched.
    pub fn created_at(&self) -> SystemTime {
        from_ms(self.inner.job.created_at_ms)
    }

    /// When the job was last put on its queue (its dispatch, its due time, or its retry).
    pub fn enqueued_at(&self) -> SystemTime {
        from_ms(self.inner.job.enqueued_at_ms)
    }

    /// The id of the chain this job is a step of, if it is one.
    pub fn chain_id(&self) -> Option<&str> {
        self.inner.job.chain_id.as_deref()
    }

    /// The application state of type `T` the worker was given with `.state(value)`, if it was
    /// (a `State<T>` parameter is the usual way to take it).
    pub fn state<T: Clone + Send + Sync + 'static>(&self) -> Option<T> {
        self.inner.states.get::<T>()
    }
}

impl Inner {
    fn is_cancel_requested(&self) -> bool {
        self.cancel_requested
            .load(std::sync::atomic::Ordering::Acquire)
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("jid", &self.jid())
            .field("job_name", &self.job_name())
            .field("queue", &self.queue())
            .field("attempt", &self.attempt())
            .field("chain_id", &self.chain_id())
            // Not `is_cancelled`: printing a context must not count as the job seeing the stop.
            .field(
                "cancelled",
                &(self.inner.attempt.is_cancelled() || self.inner.deadline.is_cancelled()),
            )
            .finish_non_exhaustive()
    }
}

fn from_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> JobInfo {
        JobInfo {
            jid: "j1".into(),
            job_name: "send_email".into(),
            queue: "mail".into(),
            attempt: 2,
            created_at_ms: 1_000,
            enqueued_at_ms: 2_500,
            chain_id: Some("c1".into()),
        }
    }

    #[test]
    fn a_context_reports_its_job() {
        let ctx = Context::new(info(), StateMap::default(), CancellationToken::new());
        assert_eq!(
            (ctx.jid(), ctx.job_name(), ctx.queue()),
            ("j1", "send_email", "mail")
        );
        assert_eq!(ctx.attempt(), 2);
        assert_eq!(ctx.created_at(), UNIX_EPOCH + Duration::from_secs(1));
        assert_eq!(ctx.enqueued_at(), UNIX_EPOCH + Duration::from_millis(2_500));
        assert_eq!(ctx.chain_id(), Some("c1"));
    }

    #[tokio::test]
    async fn cancelling_the_attempt_or_the_deadline_cancels_the_context() {
        let deadline = CancellationToken::new();
        let a = Context::new(info(), StateMap::default(), deadline.clone());
        let b = Context::new(info(), StateMap::default(), deadline.clone());
        assert!(!a.is_cancelled());
        a.cancel();
        a.cancelled().await;
        assert!(
            a.is_cancelled() && !b.is_cancelled(),
            "one attempt's timeout is its own"
        );
        deadline.cancel();
        b.cancelled().await;
        assert!(b.is_cancelled());
    }
}
