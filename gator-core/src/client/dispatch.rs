//! The dispatch methods of [`Client`]: each a thin call into the [engine](super::engine),
//! which sends it to Redis or to the test mode in force.

use super::Client;
use super::engine::{Due, Engine};
use crate::chain::Chain;
use crate::error::Result;
use crate::job::{DueTime, Job, PendingJob, encode};
use crate::unique::Dispatched;
use crate::workflow::Workflow;
use std::time::{Duration, SystemTime};

impl Client {
    /// Enqueues `job` now; returns its jid.
    pub async fn dispatch<J: Job>(&self, job: PendingJob<J>) -> Result<String> {
        Ok(self.dispatch_unique(job).await?.into_jid())
    }

    /// Enqueues many jobs of one type in one round trip; returns their jids in order. Unique
    /// jobs ([`crate::unique`]) go one by one with their locks; a duplicate's jid is its
    /// holder's.
    pub async fn dispatch_many<J: Job>(
        &self,
        jobs: impl IntoIterator<Item = PendingJob<J>>,
    ) -> Result<Vec<String>> {
        let jobs = jobs.into_iter().map(encode).collect();
        Engine::through(self).jobs(jobs).await
    }

    /// Schedules `job` to run at `time` (a `SystemTime`, or Unix seconds as `f64`); at once if
    /// `time` has passed on Redis's clock. Refuses a non-finite time or one more than
    /// [`crate::horizon::SCHEDULE_HORIZON`] ahead.
    pub async fn dispatch_at<J: Job>(
        &self,
        job: PendingJob<J>,
        time: impl Into<DueTime>,
    ) -> Result<String> {
        Ok(self.dispatch_unique_at(job, time).await?.into_jid())
    }

    /// Schedules `job` to run after `delay`, counted on Redis's clock (so a producer whose own
    /// clock is off still gets the delay it asked for); returns its jid.
    pub async fn dispatch_in<J: Job>(&self, job: PendingJob<J>, delay: Duration) -> Result<String> {
        Ok(self.dispatch_unique_in(job, delay).await?.into_jid())
    }

    /// [`Client::dispatch`] that says whether a new job was stored, or a unique job's
    /// duplicate was found (its jid returned, nothing stored). A job that is not unique is
    /// always [`Dispatched::New`].
    pub async fn dispatch_unique<J: Job>(&self, job: PendingJob<J>) -> Result<Dispatched> {
        Engine::through(self).job(encode(job), Due::Now).await
    }

    /// [`Client::dispatch_at`] that says whether a new job was stored or a duplicate found.
    /// A debounced job runs at `time` or its debounce delay from now, whichever is later.
    pub async fn dispatch_unique_at<J: Job>(
        &self,
        job: PendingJob<J>,
        time: impl Into<DueTime>,
    ) -> Result<Dispatched> {
        let due = Due::at(time)?;
        Engine::through(self).job(encode(job), due).await
    }

    /// [`Client::dispatch_in`] that says whether a new job was stored or a duplicate found.
    /// A debounced job runs after `delay` or its debounce delay, whichever is longer.
    pub async fn dispatch_unique_in<J: Job>(
        &self,
        job: PendingJob<J>,
        delay: Duration,
    ) -> Result<Dispatched> {
        let due = Due::after(delay)?;
        Engine::through(self).job(encode(job), due).await
    }

    /// Stores `chain`: its first step on its queue now (or scheduled at `at`, on Redis's
    /// clock), the rest waiting in the chain's list. Returns the chain id.
    pub async fn dispatch_chain(&self, chain: Chain, at: Option<SystemTime>) -> Result<String> {
        let due = match at {
            Some(time) => Due::at(time)?,
            None => Due::Now,
        };
        Engine::through(self).chain(chain, due).await
    }

    /// Stores `chain` with its first step due after `delay`, counted on Redis's clock. Returns
    /// the chain id.
    pub async fn dispatch_chain_in(&self, chain: Chain, delay: Duration) -> Result<String> {
        let due = Due::after(delay)?;
        Engine::through(self).chain(chain, due).await
    }

    /// Stores `workflow` and starts its first stage; returns the workflow id.
    pub async fn dispatch_workflow(&self, workflow: Workflow) -> Result<String> {
        Engine::through(self).workflow(workflow).await
    }
}
