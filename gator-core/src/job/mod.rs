//! What a job is to the runtime: the [`Job`] trait that `#[job]` implements, how it runs
//! ([`Execution`]), how it fails ([`JobError`]), and a job ready to dispatch ([`PendingJob`]).

use crate::context::{Context, StateNeed};
use crate::error::{Error, Result};
use crate::payload::{self, Payload};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

mod pending;
mod pending_flow;
pub(crate) mod signature;

pub use pending::PendingJob;
pub(crate) use pending::Timing;

/// A job type. `#[job]` implements it for the type it generates; you rarely write one by hand.
pub trait Job: Sized + Send + Sync + 'static {
    /// The arguments as one value: a tuple of the job fn's parameters, stored as a JSON array.
    type Args: Serialize + DeserializeOwned + Send + 'static;
    /// The arguments as a caller writes them where it gives several jobs' (`dispatch_many`)
    /// or checks them (`testing::Fake::assert_dispatched`, `dispatched`): a tuple of the job
    /// fn's parameters, the bare value for a one-parameter job, `()` for none.
    type Item: Send + 'static;
    /// [`Job::Item`] as [`Job::Args`].
    fn args_of(item: Self::Item) -> Self::Args;
    /// [`Job::Args`] as [`Job::Item`].
    fn item_of(args: Self::Args) -> Self::Item;
    /// The wire name stored in each payload's `job` field; must never change once jobs exist.
    const NAME: &'static str;
    /// The queue a dispatch goes to unless the call names another.
    const QUEUE: &'static str;
    /// Retries after the first attempt before the job goes to the dead set (`retries = N`).
    const RETRIES: u32 = crate::retry::DEFAULT_RETRIES;
    /// How long one attempt may run (`timeout = "30s"`); `None`: as long as it takes.
    const TIMEOUT: Option<Duration> = None;
    /// The delay before the next attempt after `failures` failures (`backoff = ...`).
    fn backoff(failures: u32) -> Duration {
        crate::retry::default_backoff(failures)
    }
    /// The job's retry strategy (`retry = my_strategy`): given the failure, it decides what
    /// comes next. `None` (the default) leaves it to `retries` and `backoff`.
    fn retry(failure: &crate::retry::RetryContext<'_>) -> Option<crate::retry::RetryDecision> {
        let _ = failure;
        None
    }
    /// The application state types the job fn takes as `State<T>` parameters; the worker
    /// refuses to start without one of each.
    const STATES: &'static [StateNeed] = &[];
    /// The flow options every job of this type carries (`#[job(priority = 10, cost = 2,
    /// limit_key = region, critical, rate = "email", no_overlap)]`); a dispatch's builder
    /// methods override them. See [`crate::flow`].
    fn flow(args: &Self::Args) -> crate::flow::FlowOptions {
        let _ = args;
        crate::flow::FlowOptions::default()
    }
    /// The unique options every job of this type carries (`#[job(unique_for = "10m",
    /// unique_until = "start", debounce = "5s")]`); `None`: not unique unless a dispatch asks.
    /// See [`crate::unique`].
    const UNIQUE: Option<crate::unique::UniqueOptions> = None;
    /// The expiry every job of this type carries (`#[job(expires_in = "10m", on_expire =
    /// "drop")]`); `None`: it waits as long as it must. See [`crate::expiry`].
    const EXPIRY: Option<crate::expiry::Expiry> = None;
    /// The job fn's wire parameters and the flow options it declares, as the job catalogue
    /// publishes them (`#[job]` writes it; [`crate::catalogue::Signature::UNKNOWN`] by default).
    const SIGNATURE: signature::Signature = signature::Signature::UNKNOWN;
    /// Turns decoded arguments, and this attempt's context, into the work to run.
    fn execute(args: Self::Args, ctx: Context) -> Execution;
}

/// The work of one job, ready to run: the worker runs `Blocking` on a blocking thread so a
/// sync job never stalls the async runtime, and `Async` as a task.
pub enum Execution {
    /// A plain `fn` job.
    Blocking(Box<dyn FnOnce() -> JobResult + Send + 'static>),
    /// An `async fn` job.
    Async(Pin<Box<dyn Future<Output = JobResult> + Send + 'static>>),
}

impl fmt::Debug for Execution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Execution::Blocking(_) => "Execution::Blocking",
            Execution::Async(_) => "Execution::Async",
        })
    }
}

/// The outcome of one run of a job body: on success, what it returned as JSON (`None` for
/// `()` or a value that serializes to `null`), stored with its status (`Client::result`).
pub type JobResult = std::result::Result<Option<String>, JobError>;

pub use crate::failure::JobError;

/// What a job fn may return: `()`, or `Result<T, E>` with `T: Serialize` (its result, read
/// back with `Client::result`) and `E: Display`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a job result: a job returns `()` or `Result<T, E>` where T: Serialize, E: Display",
    label = "a job must return `()` or `Result<T, E>` where T: Serialize, E: Display"
)]
pub trait IntoJobResult {
    /// Converts the job fn's return value into success or a [`JobError`].
    fn into_job_result(self) -> JobResult;
}

impl IntoJobResult for () {
    fn into_job_result(self) -> JobResult {
        Ok(None)
    }
}

impl<T: Serialize, E: fmt::Display + 'static> IntoJobResult for std::result::Result<T, E> {
    fn into_job_result(self) -> JobResult {
        match self {
            Ok(value) => match serde_json::to_string(&value) {
                Ok(json) if json == "null" => Ok(None),
                Ok(json) => Ok(Some(json)),
                // The work is done, but its result cannot be kept: running it again would
                // fail the same way, so it is not retried.
                Err(e) => Err(JobError::discard(format!(
                    "the job succeeded, but its result could not be serialized: {e}"
                ))),
            },
            Err(e) => Err(match (&e as &dyn Any).downcast_ref::<JobError>() {
                Some(job_error) => job_error.clone(),
                // `{:#}` so anyhow-style errors keep their whole chain of causes.
                None => JobError::new(format!("{e:#}")),
            }),
        }
    }
}

/// When a scheduled job is due: a `SystemTime`, or Unix seconds as an `f64` (as other
/// languages' clients pass times).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DueTime {
    /// A point in time.
    At(SystemTime),
    /// Seconds since the Unix epoch.
    UnixSeconds(f64),
}

impl From<SystemTime> for DueTime {
    fn from(time: SystemTime) -> DueTime {
        DueTime::At(time)
    }
}

impl From<f64> for DueTime {
    fn from(secs: f64) -> DueTime {
        DueTime::UnixSeconds(secs)
    }
}

impl DueTime {
    /// The due time in ms since the epoch, refusing a non-finite time or one past the
    /// scheduling horizon.
    pub fn to_ms(self) -> Result<u64> {
        let ms = match self {
            DueTime::At(time) => payload::to_ms(time),
            DueTime::UnixSeconds(secs) if !secs.is_finite() => {
                return Err(Error::InvalidTime {
                    reason: format!("{secs} is not a finite time"),
                });
            }
            DueTime::UnixSeconds(secs) => (secs.max(0.0) * 1000.0) as u64,
        };
        crate::horizon::check_due_ms(ms)
    }
}

/// A job's payload, ready to be placed on a shard of its queue (if the queue is sharded) and
/// sent.
#[derive(Debug)]
pub(crate) struct Encoded {
    pub(crate) payload: Payload,
    pub(crate) shard_key: Option<String>,
    /// Its expiry, turned into the payload's `expires_at` on Redis's clock when it is placed.
    pub(crate) expiry: Option<crate::expiry::Expiry>,
}

/// A job's payload and shard key. A job dispatched on its own gives its due time to the
/// dispatch first ([`PendingJob::take_timing`]); one that still has one here is a chain or
/// workflow step, a reply handler or a cron job, which run when something else says, so its
/// own time is refused rather than ignored.
pub(crate) fn encode<J: Job>(job: PendingJob<J>) -> Result<Encoded> {
    if job.timing.is_some() {
        return Err(Error::InvalidTime {
            reason: "`.at(..)` and `.after(..)` are for a job dispatched on its own: a step of \
                     a chain or workflow runs when the steps before it succeed (give the chain \
                     its time), and `dispatch_many` sends its jobs now"
                .into(),
        });
    }
    crate::store::keys::validate_queue(&job.queue)?;
    job.flow.validate()?;
    let args = serde_json::to_value(&job.args)?;
    let mut shard_key = job.shard_key;
    let unique = match job.unique {
        Some(options) => {
            options.validate()?;
            let key = match job.unique_key {
                Some(key) => crate::unique::check_key(key)?,
                None => crate::unique::default_key(J::NAME, &args),
            };
            // Duplicates must meet on one shard of a sharded queue: placed by their key.
            shard_key.get_or_insert_with(|| key.clone());
            Some(crate::unique::Unique::new(key, &options))
        }
        None => None,
    };
    let mut payload = Payload::new(J::NAME, &job.queue, args);
    payload.flow = (!job.flow.is_empty()).then(|| Box::new(job.flow));
    payload.unique = unique.map(Box::new);
    let expiry = crate::expiry::checked(job.expiry)?;
    Ok(Encoded {
        payload,
        shard_key,
        expiry,
    })
}
