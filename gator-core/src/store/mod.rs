//! The only code that talks to Redis. Each fn wraps one command, pipeline or script and
//! returns typed results; callers never spell a key or a command. Its rooms are the crate's
//! own. Outside `gator-core` the store is a few handles, each holding its connection and key
//! names, each with a small surface for one user, and [`crate::Admin`] for reading and
//! repairing (the dashboard, the HTTP API, the CLI):
//!
//! | Handle | Offers | For |
//! |---|---|---|
//! | [`Fetch`] | batch, blocking and filtered fetches; admission of controlled queues | the worker's fetcher and admission |
//! | [`Run`] | a job's set-aside payload and parents; its running record, progress, cancel marks | the worker's processor |
//! | [`Settle`] | every outcome write and the hand-offs after it | the worker's settle room alone |
//! | [`Recovery`] | every put-back; the drains that finish interrupted hand-offs | the worker's recovery and shutdown |
//! | [`Presence`] | heartbeat, queue leases, job catalogue, server identity | the worker's heartbeat, leases, catalogue, launcher |
//! | [`Upkeep`] | promote due jobs, trim finished ones, flush counters, fire cron; the reads that plan them | the worker's periodic loops |
//!
//! Re-exported here with them: the types their methods take and return. A room of the store
//! is not reachable from outside:
//!
//! ```compile_fail
//! use gator_core::store::inflight::fetch_batch; // a room of `store`: private to gator-core
//! ```

pub(crate) mod ack;
pub(crate) mod admit;
pub(crate) mod aside;
pub(crate) mod broken;
pub(crate) mod cancel;
pub(crate) mod catalogue;
pub(crate) mod chain;
pub(crate) mod cron;
pub(crate) mod dead;
pub(crate) mod door;
pub(crate) mod durable;
pub(crate) mod expiry;
pub(crate) mod fetched;
pub(crate) mod finished;
pub(crate) mod fleet;
pub(crate) mod flow;
pub(crate) mod flow_status;
pub(crate) mod handed;
pub(crate) mod handoff;
pub(crate) mod inflight;
pub(crate) mod journeys;
pub(crate) mod keys;
pub(crate) mod later;
pub(crate) mod lease;
pub(crate) mod locate;
pub(crate) mod position;
pub(crate) mod processes;
pub(crate) mod progress;
pub(crate) mod queue;
pub(crate) mod relayed;
pub(crate) mod replicas;
pub(crate) mod reply;
pub(crate) mod scaling;
pub(crate) mod schedule;
pub(crate) mod scripts;
pub(crate) mod server;
pub(crate) mod set_entry;
pub(crate) mod sets;
mod shake;
pub(crate) mod shards;
pub(crate) mod stats;
pub(crate) mod status;
pub(crate) mod unique;
pub(crate) mod workflow;

#[cfg(test)]
mod docs_test;
#[cfg(test)]
mod lifecycle_test;
#[cfg(test)]
mod seam_test;

pub use door::*;

/// The scripts themselves, for crash tests that stop a protocol between two of its steps (a
/// process killed after one script and before the next). Not a door: it exists only with the
/// `crash-seams` feature, which the workspace's tests crate turns on.
#[cfg(feature = "crash-seams")]
#[doc(hidden)]
pub mod crash {
    pub use super::scripts::{ACK, CHAIN_PUSH, CHAIN_TAKE, WF_CREATE, WF_REPORT};
    pub use super::workflow::split_id;
}
