//! The one `dispatch` of each builder: a [`PendingJob`], a [`Chain`], a [`Workflow`], and
//! [`dispatch_many`] for many jobs at once. Each sends what it was built with, through the
//! client it names ([`Via`]), as a thin call into the [engine](super::engine).

use super::Client;
use super::engine::{Due, Engine};
use crate::chain::Chain;
use crate::error::Result;
use crate::job::{Job, PendingJob, encode};
use crate::unique::Dispatched;
use crate::workflow::Workflow;

/// The client a builder's dispatch goes through: `()`, the process-wide default
/// ([`super::default_client`], connected on first use unless test mode is on), or `&Client`,
/// named with `.through(&client)`. Sealed: only these two.
pub trait Via: sealed::Sealed + Sync {
    /// The client named; `None` for the default.
    fn client(&self) -> Option<&Client>;
}

impl Via for () {
    fn client(&self) -> Option<&Client> {
        None
    }
}

impl Via for &Client {
    fn client(&self) -> Option<&Client> {
        Some(self)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for () {}
    impl Sealed for &super::Client {}
}

/// Where a dispatch through `via` goes: to Redis through its client, or to the test mode.
async fn engine<C: Via>(via: &C) -> Result<Engine<'_>> {
    match via.client() {
        Some(client) => Ok(Engine::through(client)),
        None => Engine::default().await,
    }
}

impl<J: Job, C> PendingJob<J, C> {
    /// Sends this job through `client` instead of the process-wide default.
    pub fn through(self, client: &Client) -> PendingJob<J, &Client> {
        self.swap_client(client).0
    }
}

impl<J: Job, C: Via> PendingJob<J, C> {
    /// Sends the job: on its queue now, or due at `.at(..)` / after `.after(..)`; returns its
    /// jid. A unique job whose duplicate is waiting stores nothing and returns the holder's
    /// jid ([`PendingJob::dispatch_unique`] says which).
    pub async fn dispatch(self) -> Result<String> {
        Ok(self.dispatch_unique().await?.into_jid())
    }

    /// [`PendingJob::dispatch`] that says whether a new job was stored, or a unique job's
    /// duplicate was found (its jid returned, nothing stored; see [`crate::unique`]). A job
    /// that is not unique is always [`Dispatched::New`]. A debounced job runs at its due time
    /// or its debounce delay from now, whichever is later.
    pub async fn dispatch_unique(mut self) -> Result<Dispatched> {
        let due = Due::of(self.take_timing())?;
        let (job, via) = self.swap_client(());
        engine(&via).await?.job(encode(job), due).await
    }
}

/// Enqueues many jobs of one type in one round trip through the process-wide default client;
/// returns their jids in order ([`Client::dispatch_many`] through a client of your choice).
/// Unique jobs ([`crate::unique`]) go one by one with their locks; a duplicate's jid is its
/// holder's. The jobs take no due time of their own (`.at`, `.after` are refused).
pub async fn dispatch_many<J: Job>(
    jobs: impl IntoIterator<Item = PendingJob<J>>,
) -> Result<Vec<String>> {
    let jobs = jobs.into_iter().map(encode).collect();
    Engine::default().await?.jobs(jobs).await
}

impl Client {
    /// [`dispatch_many`] through this client: many jobs of one type in one round trip; their
    /// jids in order.
    pub async fn dispatch_many<J: Job>(
        &self,
        jobs: impl IntoIterator<Item = PendingJob<J>>,
    ) -> Result<Vec<String>> {
        let jobs = jobs.into_iter().map(encode).collect();
        Engine::through(self).jobs(jobs).await
    }
}

impl<C> Chain<C> {
    /// Sends this chain through `client` instead of the process-wide default.
    pub fn through(self, client: &Client) -> Chain<&Client> {
        self.swap_client(client).0
    }
}

impl<C: Via> Chain<C> {
    /// Stores the chain: its first step on its queue now (or due at `.at(..)` / after
    /// `.after(..)`, on Redis's clock), the rest waiting in the chain's list. Returns the
    /// chain id.
    pub async fn dispatch(mut self) -> Result<String> {
        let due = Due::of(self.take_timing())?;
        let (chain, via) = self.swap_client(());
        engine(&via).await?.chain(chain, due).await
    }
}

impl<C> Workflow<C> {
    /// Sends this workflow through `client` instead of the process-wide default.
    pub fn through(self, client: &Client) -> Workflow<&Client> {
        self.swap_client(client).0
    }
}

impl<C: Via> Workflow<C> {
    /// Stores the workflow and starts its first stage; returns the workflow id
    /// (`<uuid>@<home queue>`).
    pub async fn dispatch(self) -> Result<String> {
        let (workflow, via) = self.swap_client(());
        engine(&via).await?.workflow(workflow).await
    }
}
