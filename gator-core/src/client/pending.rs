//! Dispatching what a caller built, through the process-wide default client (or a client it
//! names): a [`PendingJob`], many of them, a [`Chain`], a [`Workflow`]. Each method is a thin
//! call into the [engine](super::engine), as [`Client`]'s own dispatch methods are.

use super::Client;
use super::engine::{Due, Engine};
use crate::chain::Chain;
use crate::error::Result;
use crate::job::{DueTime, Job, PendingJob, encode};
use crate::unique::Dispatched;
use crate::workflow::Workflow;
use std::time::{Duration, SystemTime};

impl<J: Job> PendingJob<J> {
    /// Enqueues now through the process-wide default client; returns the jid.
    pub async fn dispatch(self) -> Result<String> {
        Ok(self.dispatch_unique().await?.into_jid())
    }

    /// Schedules the job to run at `time` (a `SystemTime`, or Unix seconds as `f64`) through
    /// the default client; returns the jid.
    pub async fn dispatch_at(self, time: impl Into<DueTime>) -> Result<String> {
        let due = Due::at(time)?;
        Ok(Engine::default()
            .await?
            .job(encode(self), due)
            .await?
            .into_jid())
    }

    /// Schedules the job to run after `delay` through the default client; returns the jid.
    pub async fn dispatch_in(self, delay: Duration) -> Result<String> {
        Ok(self.dispatch_unique_in(delay).await?.into_jid())
    }

    /// [`PendingJob::dispatch`] that says whether a new job was stored or a unique job's
    /// duplicate was found ([`crate::unique`]); a job that is not unique is always new.
    pub async fn dispatch_unique(self) -> Result<Dispatched> {
        Engine::default().await?.job(encode(self), Due::Now).await
    }

    /// [`PendingJob::dispatch_in`] that says whether a new job was stored or a unique job's
    /// duplicate was found.
    pub async fn dispatch_unique_in(self, delay: Duration) -> Result<Dispatched> {
        let due = Due::after(delay)?;
        Engine::default().await?.job(encode(self), due).await
    }

    /// [`PendingJob::dispatch_with`] that says whether a new job was stored or a unique job's
    /// duplicate was found.
    pub async fn dispatch_unique_with(self, client: &Client) -> Result<Dispatched> {
        client.dispatch_unique(self).await
    }

    /// Enqueues now through `client`; returns the jid.
    pub async fn dispatch_with(self, client: &Client) -> Result<String> {
        client.dispatch(self).await
    }
}

/// Enqueues many jobs of one type in one round trip through the default client.
pub async fn dispatch_many<J: Job>(
    jobs: impl IntoIterator<Item = PendingJob<J>>,
) -> Result<Vec<String>> {
    let jobs = jobs.into_iter().map(encode).collect();
    Engine::default().await?.jobs(jobs).await
}

impl Chain {
    /// Enqueues the first step now through the default client; returns the chain id.
    pub async fn dispatch(self) -> Result<String> {
        Engine::default().await?.chain(self, Due::Now).await
    }

    /// Runs the first step at `time` through the default client; returns the chain id.
    pub async fn dispatch_at(self, time: SystemTime) -> Result<String> {
        let due = Due::at(time)?;
        Engine::default().await?.chain(self, due).await
    }

    /// Runs the first step after `delay` (on Redis's clock) through the default client; returns
    /// the chain id.
    pub async fn dispatch_in(self, delay: Duration) -> Result<String> {
        let due = Due::after(delay)?;
        Engine::default().await?.chain(self, due).await
    }

    /// Enqueues the first step now through `client`; returns the chain id.
    pub async fn dispatch_with(self, client: &Client) -> Result<String> {
        client.dispatch_chain(self, None).await
    }
}

impl Workflow {
    /// Stores the workflow and starts its first stage through the default client; returns the
    /// workflow id (`<uuid>@<home queue>`).
    pub async fn dispatch(self) -> Result<String> {
        Engine::default().await?.workflow(self).await
    }

    /// [`Workflow::dispatch`] through `client`.
    pub async fn dispatch_with(self, client: &Client) -> Result<String> {
        client.dispatch_workflow(self).await
    }
}
