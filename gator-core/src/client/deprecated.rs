//! The dispatch entry points before each thing dispatched had one builder (0.10.0): kept for
//! one release, each a line or two over the builder's `dispatch`. Removed in the next release.

use super::Client;
use crate::chain::Chain;
use crate::error::Result;
use crate::job::{DueTime, Job, PendingJob};
use crate::unique::Dispatched;
use crate::workflow::Workflow;
use std::time::{Duration, SystemTime};

impl Client {
    /// Enqueues `job` now; returns its jid.
    #[deprecated(since = "0.10.0", note = "use `job.through(&client).dispatch()`")]
    pub async fn dispatch<J: Job>(&self, job: PendingJob<J>) -> Result<String> {
        job.through(self).dispatch().await
    }

    /// Schedules `job` to run at `time`; returns its jid.
    #[deprecated(
        since = "0.10.0",
        note = "use `job.at(time).through(&client).dispatch()`"
    )]
    pub async fn dispatch_at<J: Job>(
        &self,
        job: PendingJob<J>,
        time: impl Into<DueTime>,
    ) -> Result<String> {
        job.at(time).through(self).dispatch().await
    }

    /// Schedules `job` to run after `delay`, on Redis's clock; returns its jid.
    #[deprecated(
        since = "0.10.0",
        note = "use `job.after(delay).through(&client).dispatch()`"
    )]
    pub async fn dispatch_in<J: Job>(&self, job: PendingJob<J>, delay: Duration) -> Result<String> {
        job.after(delay).through(self).dispatch().await
    }

    /// [`Client::dispatch`] that says whether a unique job's duplicate was found.
    #[deprecated(
        since = "0.10.0",
        note = "use `job.through(&client).dispatch_unique()`"
    )]
    pub async fn dispatch_unique<J: Job>(&self, job: PendingJob<J>) -> Result<Dispatched> {
        job.through(self).dispatch_unique().await
    }

    /// [`Client::dispatch_at`] that says whether a unique job's duplicate was found.
    #[deprecated(
        since = "0.10.0",
        note = "use `job.at(time).through(&client).dispatch_unique()`"
    )]
    pub async fn dispatch_unique_at<J: Job>(
        &self,
        job: PendingJob<J>,
        time: impl Into<DueTime>,
    ) -> Result<Dispatched> {
        job.at(time).through(self).dispatch_unique().await
    }

    /// [`Client::dispatch_in`] that says whether a unique job's duplicate was found.
    #[deprecated(
        since = "0.10.0",
        note = "use `job.after(delay).through(&client).dispatch_unique()`"
    )]
    pub async fn dispatch_unique_in<J: Job>(
        &self,
        job: PendingJob<J>,
        delay: Duration,
    ) -> Result<Dispatched> {
        job.after(delay).through(self).dispatch_unique().await
    }

    /// Stores `chain`, its first step now or at `at`; returns the chain id.
    #[deprecated(
        since = "0.10.0",
        note = "use `chain.through(&client).dispatch()`, with `.at(time)` for a time"
    )]
    pub async fn dispatch_chain(&self, chain: Chain, at: Option<SystemTime>) -> Result<String> {
        let chain = chain.through(self);
        match at {
            Some(time) => chain.at(time).dispatch().await,
            None => chain.dispatch().await,
        }
    }

    /// Stores `chain`, its first step due after `delay`; returns the chain id.
    #[deprecated(
        since = "0.10.0",
        note = "use `chain.after(delay).through(&client).dispatch()`"
    )]
    pub async fn dispatch_chain_in(&self, chain: Chain, delay: Duration) -> Result<String> {
        chain.after(delay).through(self).dispatch().await
    }

    /// Stores `workflow` and starts its first stage; returns the workflow id.
    #[deprecated(since = "0.10.0", note = "use `workflow.through(&client).dispatch()`")]
    pub async fn dispatch_workflow(&self, workflow: Workflow) -> Result<String> {
        workflow.through(self).dispatch().await
    }

    /// Dispatches the job named `job` on `queue`, now or at `at`; returns the jid.
    #[deprecated(
        since = "0.10.0",
        note = "use `client.dispatch_by_name(job, args).queue(queue).dispatch()`, with `.at(time)?`"
    )]
    pub async fn enqueue_raw(
        &self,
        queue: &str,
        job: &str,
        args: serde_json::Value,
        at: Option<SystemTime>,
    ) -> Result<String> {
        let by_name = self.dispatch_by_name(job, args).queue(queue);
        let by_name = match at {
            Some(at) => by_name.at(at)?,
            None => by_name,
        };
        Ok(by_name.dispatch().await?.into_jid())
    }

    /// Dispatches the job named `job` on `queue` after `delay`; returns the jid.
    #[deprecated(
        since = "0.10.0",
        note = "use `client.dispatch_by_name(job, args).queue(queue).after(delay)?.dispatch()`"
    )]
    pub async fn enqueue_raw_in(
        &self,
        queue: &str,
        job: &str,
        args: serde_json::Value,
        delay: Duration,
    ) -> Result<String> {
        let by_name = self.dispatch_by_name(job, args).queue(queue).after(delay)?;
        Ok(by_name.dispatch().await?.into_jid())
    }
}

impl<J: Job> PendingJob<J> {
    /// Schedules the job to run at `time` through the default client; returns the jid.
    #[deprecated(since = "0.10.0", note = "use `.at(time).dispatch()`")]
    pub async fn dispatch_at(self, time: impl Into<DueTime>) -> Result<String> {
        self.at(time).dispatch().await
    }

    /// Schedules the job to run after `delay` through the default client; returns the jid.
    #[deprecated(since = "0.10.0", note = "use `.after(delay).dispatch()`")]
    pub async fn dispatch_in(self, delay: Duration) -> Result<String> {
        self.after(delay).dispatch().await
    }

    /// [`PendingJob::dispatch_in`] that says whether a unique job's duplicate was found.
    #[deprecated(since = "0.10.0", note = "use `.after(delay).dispatch_unique()`")]
    pub async fn dispatch_unique_in(self, delay: Duration) -> Result<Dispatched> {
        self.after(delay).dispatch_unique().await
    }

    /// [`PendingJob::dispatch_with`] that says whether a unique job's duplicate was found.
    #[deprecated(since = "0.10.0", note = "use `.through(&client).dispatch_unique()`")]
    pub async fn dispatch_unique_with(self, client: &Client) -> Result<Dispatched> {
        self.through(client).dispatch_unique().await
    }

    /// Enqueues now through `client`; returns the jid.
    #[deprecated(since = "0.10.0", note = "use `.through(&client).dispatch()`")]
    pub async fn dispatch_with(self, client: &Client) -> Result<String> {
        self.through(client).dispatch().await
    }
}

impl Chain {
    /// Runs the first step at `time` through the default client; returns the chain id.
    #[deprecated(since = "0.10.0", note = "use `.at(time).dispatch()`")]
    pub async fn dispatch_at(self, time: SystemTime) -> Result<String> {
        self.at(time).dispatch().await
    }

    /// Runs the first step after `delay` through the default client; returns the chain id.
    #[deprecated(since = "0.10.0", note = "use `.after(delay).dispatch()`")]
    pub async fn dispatch_in(self, delay: Duration) -> Result<String> {
        self.after(delay).dispatch().await
    }

    /// Enqueues the first step now through `client`; returns the chain id.
    #[deprecated(since = "0.10.0", note = "use `.through(&client).dispatch()`")]
    pub async fn dispatch_with(self, client: &Client) -> Result<String> {
        self.through(client).dispatch().await
    }
}

impl Workflow {
    /// [`Workflow::dispatch`] through `client`.
    #[deprecated(since = "0.10.0", note = "use `.through(&client).dispatch()`")]
    pub async fn dispatch_with(self, client: &Client) -> Result<String> {
        self.through(client).dispatch().await
    }
}
