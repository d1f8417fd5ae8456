//! Where a dispatch goes, decided here and nowhere else: to Redis through a client, or to the
//! testing mode in force on this thread ([`crate::testing`]: recorded by a fake, or run at once
//! inline). The `dispatch` of each builder (`PendingJob`, `Chain`, `Workflow`) and
//! `dispatch_many` are thin calls into [`Engine`], so no other module asks whether test mode is
//! on, as Oban picks its engine once.

use super::Client;
use crate::chain::Chain;
use crate::error::{Error, Result};
use crate::job::{DueTime, Encoded, Timing};
use crate::testing::{self, Mode};
use crate::unique::Dispatched;
use crate::workflow::Workflow;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When a dispatched job (or a chain's first step) is due; checked against the scheduling
/// horizon ([`crate::horizon`]) when it is made.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Due {
    /// Now.
    Now,
    /// At this time, ms since the epoch (Redis's clock decides when it has come).
    At(u64),
    /// After this delay, counted on Redis's clock.
    In(Duration),
}

impl Due {
    /// At `time`, if it is a time and within the horizon.
    pub(crate) fn at(time: impl Into<DueTime>) -> Result<Due> {
        Ok(Due::At(time.into().to_ms()?))
    }

    /// After `delay`, if it is within the horizon.
    pub(crate) fn after(delay: Duration) -> Result<Due> {
        Ok(Due::In(crate::horizon::check_delay(delay)?))
    }

    /// The due time a builder was given (`.at(..)`, `.after(..)`; now if neither), checked.
    pub(crate) fn of(timing: Option<Timing>) -> Result<Due> {
        match timing {
            None => Ok(Due::Now),
            Some(Timing::At(time)) => Due::at(time),
            Some(Timing::After(delay)) => Due::after(delay),
        }
    }

    /// The due time as a test records it: a delay counts from `now`, the testing mode's
    /// clock (a fake's, which the test moves), not this host's.
    fn on_clock(self, now: SystemTime) -> Result<Option<SystemTime>> {
        Ok(match self {
            Due::Now => None,
            Due::At(ms) => Some(UNIX_EPOCH + Duration::from_millis(ms)),
            Due::In(delay) => {
                let due = now.checked_add(delay).ok_or_else(|| Error::InvalidTime {
                    reason: format!("a delay of {delay:?} is past the end of time"),
                });
                Some(due?)
            }
        })
    }
}

/// Where a dispatch goes: see the module docs.
pub(crate) enum Engine<'a> {
    /// To Redis, through this client.
    Redis(Cow<'a, Client>),
    /// To the testing mode of this thread.
    Testing(Arc<Mode>),
}

impl Engine<'_> {
    /// The engine of a dispatch through `client`. Test mode catches it too: a test's code may
    /// hold a client of its own.
    pub(crate) fn through(client: &Client) -> Engine<'_> {
        match testing_mode() {
            Some(mode) => Engine::Testing(mode),
            None => Engine::Redis(Cow::Borrowed(client)),
        }
    }

    /// The engine of a dispatch through the process-wide default client (connected on first
    /// use, unless test mode is on).
    pub(crate) async fn default() -> Result<Engine<'static>> {
        Ok(match testing_mode() {
            Some(mode) => Engine::Testing(mode),
            None => Engine::Redis(Cow::Owned(super::default_client().await?)),
        })
    }

    /// Dispatches one job, due `due`: stored (a unique job with its lock, so perhaps found a
    /// duplicate), recorded, or run.
    pub(crate) async fn job(self, job: Result<Encoded>, due: Due) -> Result<Dispatched> {
        match self {
            Engine::Redis(client) => client.send(job?, due).await,
            Engine::Testing(mode) => {
                let at = due.on_clock(mode.now())?;
                Ok(Dispatched::New(testing::dispatch(mode, job, at).await?))
            }
        }
    }

    /// Dispatches many jobs now, in one round trip where it can; their jids in order.
    pub(crate) async fn jobs(self, jobs: Vec<Result<Encoded>>) -> Result<Vec<String>> {
        match self {
            Engine::Redis(client) => {
                let jobs = jobs.into_iter().collect::<Result<Vec<_>>>()?;
                client.send_many(jobs).await
            }
            Engine::Testing(mode) => {
                let mut jids = Vec::with_capacity(jobs.len());
                for job in jobs {
                    jids.push(testing::dispatch(mode.clone(), job, None).await?);
                }
                Ok(jids)
            }
        }
    }

    /// Dispatches a chain, its first step due `due`; its id.
    pub(crate) async fn chain(self, chain: Chain, due: Due) -> Result<String> {
        match self {
            Engine::Redis(client) => client.send_chain(chain, due).await,
            Engine::Testing(mode) => {
                let at = due.on_clock(mode.now())?;
                testing::dispatch_chain(mode, chain, at).await
            }
        }
    }

    /// Dispatches a workflow; its id.
    pub(crate) async fn workflow(self, workflow: Workflow) -> Result<String> {
        match self {
            Engine::Redis(client) => client.send_workflow(workflow).await,
            Engine::Testing(mode) => testing::dispatch_workflow(mode, workflow).await,
        }
    }
}

/// The one place that asks whether test mode is on (a thread-local read).
fn testing_mode() -> Option<Arc<Mode>> {
    testing::active()
}
