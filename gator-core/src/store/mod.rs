//! The only code that talks to Redis. Each fn wraps one command, pipeline or script and
//! returns typed results; callers never spell a key or a command. Its rooms are the crate's
//! own: outside `gator-core`, the store is reached through the handles in [`door`] (re-exported
//! here with the types they take and return) and through [`crate::Admin`]. A room is not
//! reachable from outside:
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
pub(crate) mod lease;
pub(crate) mod locate;
pub(crate) mod position;
pub(crate) mod processes;
pub(crate) mod progress;
pub(crate) mod queue;
pub(crate) mod replicas;
pub(crate) mod reply;
pub(crate) mod scaling;
pub(crate) mod schedule;
pub(crate) mod scripts;
pub(crate) mod server;
pub(crate) mod sets;
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
