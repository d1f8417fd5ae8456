//! A pending job's flow options ([`crate::flow`]): priority, cost, limit and fair keys,
//! critical, rate limiter, windows and no-overlap, each a builder method.

use super::{Job, PendingJob};

impl<J: Job, C> PendingJob<J, C> {
    /// Runs this job before every job of higher number on its queue (lower runs first; the
    /// default is 100, the most 9999). Makes the queue controlled ([`crate::flow`]).
    pub fn priority(mut self, priority: u16) -> Self {
        self.flow.priority = Some(priority);
        self
    }

    /// Takes `cost` units of the queue's concurrency limit while it runs, and `cost` places
    /// in its rate limiters.
    pub fn cost(mut self, cost: u32) -> Self {
        self.flow.cost = Some(cost);
        self
    }

    /// Counts this job against the share of limit key `key` (a region, a customer, ...).
    pub fn limit_key(mut self, key: impl Into<String>) -> Self {
        self.flow.key = Some(key.into());
        self
    }

    /// Takes this job in turn with the other fair keys of its queue (a tenant, a customer):
    /// one key's million jobs do not hold back another's ten. Makes the queue controlled; see
    /// [`crate::flow::FlowOptions::fair`].
    pub fn fair_key(mut self, key: impl Into<String>) -> Self {
        self.flow.fair = Some(key.into());
        self
    }

    /// Runs this job outside the queue's concurrency limit, before its other jobs.
    pub fn critical(mut self) -> Self {
        self.flow.critical = true;
        self
    }

    /// Also obeys the queue's rate limiter `name` (its rate is set in Redis:
    /// `gator-worker queue rate QUEUE 100/1s --limiter NAME`).
    pub fn rate_limiter(mut self, name: impl Into<String>) -> Self {
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
    ) -> Self {
        self.flow.windows = windows.into_iter().map(Into::into).collect();
        self.flow.tz = tz.map(str::to_owned);
        self
    }

    /// Runs this job only while no other job of its queue with the same key runs (see
    /// [`crate::flow::overlap`]); the key is the job's wire name and arguments. Makes the
    /// queue controlled.
    pub fn no_overlap(mut self) -> Self {
        self.flow.overlap = Some(crate::flow::overlap::default_key(J::NAME, &self.args));
        self
    }

    /// Runs this job only while no other job of its queue with overlap key `key` runs (see
    /// [`crate::flow::overlap`]): a key longer than 128 bytes is replaced by its digest.
    /// Overrides the key of `#[job(no_overlap)]`, or makes this one dispatch no-overlap.
    pub fn overlap_key(mut self, key: impl Into<String>) -> Self {
        self.flow.overlap = Some(crate::flow::overlap::fit_key(key));
        self
    }

    /// The flow options this job will carry.
    pub fn flow_options(&self) -> &crate::flow::FlowOptions {
        &self.flow
    }
}
