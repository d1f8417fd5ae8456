//! A job ready to dispatch: [`PendingJob`], the builder of one job's dispatch, with its queue,
//! due time, shard, unique and expiry options (its flow options are in `pending_flow.rs`; the
//! client it goes through and `dispatch` itself are in `client/pending.rs`).

use super::{DueTime, Job};
use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime};

/// A job with its arguments, not yet sent: the builder of its dispatch. Every option is a
/// method (`.queue(..)`, `.at(..)`, `.after(..)`, `.unique()`, `.expires_in(..)`, the flow
/// options, `.through(&client)`), and `.dispatch()` sends it. `SendEmail::call(to, subject)`
/// makes one.
///
/// `C` is the client it goes through: `()`, the process-wide default, until
/// [`PendingJob::through`] names one.
#[must_use = "a PendingJob does nothing until it is dispatched"]
pub struct PendingJob<J: Job, C = ()> {
    pub(crate) args: J::Args,
    pub(crate) queue: Cow<'static, str>,
    pub(crate) shard_key: Option<String>,
    pub(crate) flow: crate::flow::FlowOptions,
    pub(crate) unique: Option<crate::unique::UniqueOptions>,
    pub(crate) unique_key: Option<String>,
    pub(crate) expiry: Option<crate::expiry::Expiry>,
    /// When it is due, as the caller gave it: checked when it is dispatched.
    pub(crate) timing: Option<Timing>,
    /// The client it goes through (`()`: the default).
    pub(crate) client: C,
}

/// When a job (or a chain's first step) is due, as the caller gave it: checked against the
/// scheduling horizon ([`crate::horizon`]) when it is dispatched, which refuses it with its
/// reason, so every option stays a plain builder method.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Timing {
    /// At this time (Redis's clock decides when it has come).
    At(DueTime),
    /// After this delay, counted on Redis's clock.
    After(Duration),
}

impl<J: Job, C> fmt::Debug for PendingJob<J, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingJob")
            .field("job", &J::NAME)
            .field("queue", &self.queue)
            .field("shard_key", &self.shard_key)
            .field("flow", &self.flow)
            .field("unique", &self.unique)
            .field("unique_key", &self.unique_key)
            .field("expiry", &self.expiry)
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

impl<J: Job> PendingJob<J> {
    /// The job `J` with `args`, bound for `J`'s default queue.
    pub fn new(args: J::Args) -> Self {
        let flow = J::flow(&args);
        PendingJob {
            args,
            queue: Cow::Borrowed(J::QUEUE),
            shard_key: None,
            flow,
            unique: J::UNIQUE,
            unique_key: None,
            expiry: J::EXPIRY,
            timing: None,
            client: (),
        }
    }
}

impl<J: Job, C> PendingJob<J, C> {
    /// Makes this job due at `time` (a `SystemTime`, or Unix seconds as `f64`); at once if
    /// `time` has passed on Redis's clock. Refused at dispatch if not finite or more than
    /// [`crate::horizon::SCHEDULE_HORIZON`] ahead. Replaces an earlier `.after(..)`.
    pub fn at(mut self, time: impl Into<DueTime>) -> Self {
        self.timing = Some(Timing::At(time.into()));
        self
    }

    /// Makes this job due after `delay`, counted on Redis's clock (so a producer whose own
    /// clock is off still gets the delay it asked for). Refused at dispatch if past the
    /// horizon. Replaces an earlier `.at(..)`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.timing = Some(Timing::After(delay));
        self
    }

    /// The due time it was given, taken out: a dispatch turns it into its due time before it
    /// encodes the job.
    pub(crate) fn take_timing(&mut self) -> Option<Timing> {
        self.timing.take()
    }

    /// This job going through `client` instead, and the client it had.
    pub(crate) fn swap_client<D>(self, client: D) -> (PendingJob<J, D>, C) {
        let job = PendingJob {
            args: self.args,
            queue: self.queue,
            shard_key: self.shard_key,
            flow: self.flow,
            unique: self.unique,
            unique_key: self.unique_key,
            expiry: self.expiry,
            timing: self.timing,
            client,
        };
        (job, self.client)
    }

    /// Makes this job unique (see [`crate::unique`]) with the options it has, or the defaults:
    /// for [`crate::unique::DEFAULT_UNIQUE_FOR`], until it succeeds, keyed by its wire name
    /// and arguments.
    pub fn unique(mut self) -> Self {
        self.unique.get_or_insert_with(Default::default);
        self
    }

    /// Makes this job unique for `ttl` at most (see [`crate::unique`]): while it waits, runs or
    /// retries, a dispatch with the same key returns its jid and stores nothing.
    pub fn unique_for(mut self, ttl: Duration) -> Self {
        self.unique.get_or_insert_with(Default::default).ttl = ttl;
        self
    }

    /// Releases this job's unique lock when it starts, or when it succeeds (the default).
    /// Makes it unique (for [`crate::unique::DEFAULT_UNIQUE_FOR`] unless set).
    pub fn unique_until(mut self, until: crate::unique::UniqueUntil) -> Self {
        self.unique.get_or_insert_with(Default::default).until = until;
        self
    }

    /// Uses `key` as this job's unique key instead of its wire name and arguments. Makes it
    /// unique (for [`crate::unique::DEFAULT_UNIQUE_FOR`] unless set).
    pub fn unique_key(mut self, key: impl Into<String>) -> Self {
        self.unique.get_or_insert_with(Default::default);
        self.unique_key = Some(key.into());
        self
    }

    /// Debounces this job: it runs `delay` after the last dispatch with its unique key, once,
    /// with the last arguments (see [`crate::unique`]). Makes it unique.
    pub fn debounce(mut self, delay: Duration) -> Self {
        self.unique.get_or_insert_with(Default::default).debounce = Some(delay);
        self
    }

    /// The unique options this job will carry, if it is unique.
    pub fn unique_options(&self) -> Option<&crate::unique::UniqueOptions> {
        self.unique.as_ref()
    }

    /// Sends this one job to `queue` instead of the job's default queue.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Cow::Owned(queue.into());
        self
    }

    /// Places this job by `key` if its queue is sharded (see [`crate::shards`]): every job
    /// with the same key goes to the same shard, so they run in the order they were sent, as
    /// on an unsharded queue. Without a key, a client deals jobs over the shards in turn. On a
    /// queue that is not sharded, the key changes nothing.
    pub fn shard_key(mut self, key: impl Into<String>) -> Self {
        self.shard_key = Some(key.into());
        self
    }

    /// Expires this job if it has not started `ttl` after its dispatch, counted on Redis's
    /// clock (see [`crate::expiry`]): it then never runs. Refused at dispatch if zero or past
    /// the 5-year horizon.
    pub fn expires_in(mut self, ttl: Duration) -> Self {
        let on_expire = self.expiry.map(|e| e.on_expire).unwrap_or_default();
        self.expiry = Some(crate::expiry::Expiry {
            deadline: crate::expiry::Deadline::In(ttl),
            on_expire,
        });
        self
    }

    /// Expires this job if it has not started by `time` on Redis's clock (see
    /// [`crate::expiry`]). Refused at dispatch if past the 5-year horizon.
    pub fn expires_at(mut self, time: SystemTime) -> Self {
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
    pub fn on_expire(mut self, on_expire: crate::expiry::OnExpire) -> Self {
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
