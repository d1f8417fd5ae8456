//! A job ready to dispatch: [`PendingJob`], its queue, shard, unique and expiry options (its
//! flow options are in `pending_flow.rs`).

use super::Job;
use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime};

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
