//! The only code that talks to Redis. Each fn wraps one command, pipeline or script and
//! returns typed results; callers never spell a key or a command.

pub mod ack;
pub mod admit;
pub mod aside;
pub mod broken;
pub mod cancel;
pub mod catalogue;
pub mod chain;
pub mod cron;
pub mod dead;
pub mod expiry;
pub mod fetched;
pub mod finished;
pub mod fleet;
pub mod flow;
pub mod flow_status;
pub(crate) mod handed;
pub mod handoff;
pub mod inflight;
pub mod journeys;
pub mod keys;
pub mod lease;
pub mod locate;
pub mod position;
pub mod processes;
pub mod progress;
pub mod queue;
pub(crate) mod replicas;
pub mod reply;
pub mod scaling;
pub mod schedule;
pub mod scripts;
pub mod server;
pub mod sets;
pub mod shards;
pub mod stats;
pub mod status;
pub mod unique;
pub mod workflow;

#[cfg(test)]
mod docs_test;
#[cfg(test)]
mod lifecycle_test;
#[cfg(test)]
mod seam_test;
