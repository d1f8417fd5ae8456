//! What a job is to the runtime: the [`Job`] trait that `#[job]` implements, how it runs
//! ([`Execution`]), how it fails ([`JobError`]), and a job ready to dispatch ([`PendingJob`]).

use crate::context::{Context, StateNeed};
use crate::error::{Error, Result};
use crate::payload::{self, Payload};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

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
    const SIGNATURE: crate::catalogue::Signature = crate::catalogue::Signature::UNKNOWN;
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

/// A job with its arguments, not yet sent: set the queue or the client, then dispatch.
/// `SendEmail::call(to, subject)` makes one.
#[must_use = "a PendingJob does nothing until it is dispatched"]
pub struct PendingJob<J: Job> {
    pub(crate) args: J::Args,
    pub(crate) queue: Cow<'static, str>,
    pub(crate) shard_key: Option<String>,
    pub(crate) flow: crate::flow::FlowOptions,
    pub(crate) unique: Option<crate::unique::UniqueOptions>,
    pub(crate) unique_key: Option<String>,
    pub(crate) expiry: Option<crate::expiry::Expiry>,
}

impl<J: Job> fmt::Debug for PendingJob<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingJob")
            .field("job", &J::NAME)
            .field("queue", &self.queue)
            .field("shard_key", &self.shard_key)
            .field("flow", &self.flow)
            .field("unique", &self.unique)
            .field("unique_key", &self.unique_key)
            .field("expiry", &self.expiry)
            .finish()
    }
}

impl<J: Job> PendingJob<J> {
    /// The job `J` with `args`, bound for `J`'s default queue.
    pub fn new(args: J::Args) -> PendingJob<J> {
        let flow = J::flow(&args);
        PendingJob {
            args,
            queue: Cow::Borrowed(J::QUEUE),
            shard_key: None,
            flow,
            unique: J::UNIQUE,
            unique_key: None,
            expiry: J::EXPIRY,
        }
    }

    /// Makes this job unique for `ttl` at most (see [`crate::unique`]): while it waits, runs or
    /// retries, a dispatch with the same key returns its jid and stores nothing.
    pub fn unique_for(mut self, ttl: Duration) -> PendingJob<J> {
        self.unique.get_or_insert_with(Default::default).ttl = ttl;
        self
    }

    /// Releases this job's unique lock when it starts, or when it succeeds (the default).
    /// Makes it unique (for [`crate::unique::DEFAULT_UNIQUE_FOR`] unless set).
    pub fn unique_until(mut self, until: crate::unique::UniqueUntil) -> PendingJob<J> {
        self.unique.get_or_insert_with(Default::default).until = until;
        self
    }

    /// Uses `key` as this job's unique key instead of its wire name and arguments. Makes it
    /// unique (for [`crate::unique::DEFAULT_UNIQUE_FOR`] unless set).
    pub fn unique_key(mut self, key: impl Into<String>) -> PendingJob<J> {
        self.unique.get_or_insert_with(Default::default);
        self.unique_key = Some(key.into());
        self
    }

    /// Debounces this job: it runs `delay` after the last dispatch with its unique key, once,
    /// with the last arguments (see [`crate::unique`]). Makes it unique.
    pub fn debounce(mut self, delay: Duration) -> PendingJob<J> {
        self.unique.get_or_insert_with(Default::default).debounce = Some(delay);
        self
    }

    /// The unique options this job will carry, if it is unique.
    pub fn unique_options(&self) -> Option<&crate::unique::UniqueOptions> {
        self.unique.as_ref()
    }

    /// Runs this job before every job of higher number on its queue (lower runs first; the
    /// default is 100, the most 9999). Makes the queue controlled ([`crate::flow`]).
    pub fn priority(mut self, priority: u16) -> PendingJob<J> {
        self.flow.priority = Some(priority);
        self
    }

    /// Takes `cost` units of the queue's concurrency limit while it runs, and `cost` places
    /// in its rate limiters.
    pub fn cost(mut self, cost: u32) -> PendingJob<J> {
        self.flow.cost = Some(cost);
        self
    }

    /// Counts this job against the share of limit key `key` (a region, a customer, ...).
    pub fn limit_key(mut self, key: impl Into<String>) -> PendingJob<J> {
        self.flow.key = Some(key.into());
        self
    }

    /// Takes this job in turn with the other fair keys of its queue (a tenant, a customer):
    /// one key's million jobs do not hold back another's ten. Makes the queue controlled; see
    /// [`crate::flow::FlowOptions::fair`].
    pub fn fair_key(mut self, key: impl Into<String>) -> PendingJob<J> {
        self.flow.fair = Some(key.into());
        self
    }

    /// Runs this job outside the queue's concurrency limit, before its other jobs.
    pub fn critical(mut self) -> PendingJob<J> {
        self.flow.critical = true;
        self
    }

    /// Also obeys the queue's rate limiter `name` (its rate is set in Redis:
    /// `gator-worker queue rate QUEUE 100/1s --limiter NAME`).
    pub fn rate_limiter(mut self, name: impl Into<String>) -> PendingJob<J> {
        self.flow.rate = Some(name.into());
        self
    }

    /// Starts this job only inside these daily time windows (`"05:00-07:00"`, `"22:00-02:00"`
    /// across midnight) in IANA zone `tz` (UTC if `None`): dispatched outside one, it is
    /// scheduled at the next opening; still waiting when its window closes, it is rescheduled
    /// to the next one instead of run. See [`crate::flow::Windows`].
    pub fn windows<S: Into<String>>(
        mut self,
        windows: impl IntoIterator<Item = S>,
        tz: Option<&str>,
    ) -> PendingJob<J> {
        self.flow.windows = windows.into_iter().map(Into::into).collect();
        self.flow.tz = tz.map(str::to_owned);
        self
    }

    /// Runs this job only while no other job of its queue with the same key runs (see
    /// [`crate::flow::overlap`]); the key is the job's wire name and arguments. Makes the
    /// queue controlled.
    pub fn no_overlap(mut self) -> PendingJob<J> {
        self.flow.overlap = Some(crate::flow::overlap::default_key(J::NAME, &self.args));
        self
    }

    /// Runs this job only while no other job of its queue with overlap key `key` runs (see
    /// [`crate::flow::overlap`]): a key longer than 128 bytes is replaced by its digest.
    /// Overrides the key of `#[job(no_overlap)]`, or makes this one dispatch no-overlap.
    pub fn overlap_key(mut self, key: impl Into<String>) -> PendingJob<J> {
        self.flow.overlap = Some(crate::flow::overlap::fit_key(key));
        self
    }

    /// The flow options this job will carry.
    pub fn flow_options(&self) -> &crate::flow::FlowOptions {
        &self.flow
    }

    /// Sends this one job to `queue` instead of the job's default queue.
    pub fn queue(mut self, queue: impl Into<String>) -> PendingJob<J> {
        self.queue = Cow::Owned(queue.into());
        self
    }

    /// Places this job by `key` if its queue is sharded (see [`crate::shards`]): every job
    /// with the same key goes to the same shard, so they run in the order they were sent, as
    /// on an unsharded queue. Without a key, a client deals jobs over the shards in turn. On a
    /// queue that is not sharded, the key changes nothing.
    pub fn shard_key(mut self, key: impl Into<String>) -> PendingJob<J> {
        self.shard_key = Some(key.into());
        self
    }

    /// Expires this job if it has not started `ttl` after its dispatch, counted on Redis's
    /// clock (see [`crate::expiry`]): it then never runs. Refused at dispatch if zero or past
    /// the 5-year horizon.
    pub fn expires_in(mut self, ttl: Duration) -> PendingJob<J> {
        let on_expire = self.expiry.map(|e| e.on_expire).unwrap_or_default();
        self.expiry = Some(crate::expiry::Expiry {
            deadline: crate::expiry::Deadline::In(ttl),
            on_expire,
        });
        self
    }

    /// Expires this job if it has not started by `time` on Redis's clock (see
    /// [`crate::expiry`]). Refused at dispatch if past the 5-year horizon.
    pub fn expires_at(mut self, time: SystemTime) -> PendingJob<J> {
        let on_expire = self.expiry.map(|e| e.on_expire).unwrap_or_default();
        // Checked against the horizon at dispatch, which refuses it with its reason.
        let deadline = crate::expiry::Deadline::At(crate::clock::to_ms(time));
        self.expiry = Some(crate::expiry::Expiry {
            deadline,
            on_expire,
        });
        self
    }

    /// What becomes of this job if it expires: kept in the dead set ([`OnExpire::Dead`], the
    /// default) or dropped ([`OnExpire::Drop`]). Without a deadline it changes nothing.
    ///
    /// [`OnExpire::Dead`]: crate::expiry::OnExpire::Dead
    /// [`OnExpire::Drop`]: crate::expiry::OnExpire::Drop
    pub fn on_expire(mut self, on_expire: crate::expiry::OnExpire) -> PendingJob<J> {
        if let Some(expiry) = &mut self.expiry {
            expiry.on_expire = on_expire;
        }
        self
    }

    /// The expiry this job will carry, if any.
    pub fn expiry(&self) -> Option<crate::expiry::Expiry> {
        self.expiry
    }

    /// The queue this job will be sent to.
    pub fn queue_name(&self) -> &str {
        &self.queue
    }

    /// The arguments.
    pub fn args(&self) -> &J::Args {
        &self.args
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

/// A job's payload and shard key.
pub(crate) fn encode<J: Job>(job: PendingJob<J>) -> Result<Encoded> {
    crate::store::keys::validate_queue(&job.queue)?;
    job.flow.validate()?;
    let args = serde_json::to_value(&job.args)?;
    let mut shard_key = job.shard_key;
    let unique = match job.unique {
        Some(options) => {
            options.validate()?;
            let key = match job.unique_key {
                Some(key) if key.is_empty() => {
                    return Err(Error::InvalidUnique {
                        reason: "a unique key must not be empty".to_owned(),
                    });
                }
                Some(key) => key,
                None => crate::unique::default_key(J::NAME, &args),
            };
            // Duplicates must meet on one shard of a sharded queue: placed by their key.
            shard_key.get_or_insert_with(|| key.clone());
            Some(crate::unique::Unique::new(key, &options))
        }
        None => None,
    };
    let mut payload = Payload::new(J::NAME, &job.queue, args);
    payload.flow = (!job.flow.is_empty()).then_some(job.flow);
    payload.unique = unique;
    let expiry = crate::expiry::checked(job.expiry)?;
    Ok(Encoded {
        payload,
        shard_key,
        expiry,
    })
}
