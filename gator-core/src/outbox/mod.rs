//! The part of the transactional outbox that knows Gator's jobs (the `gator-outbox` crate,
//! `gator::outbox` with the `postgres` feature, holds the PostgreSQL side): a job is
//! [sealed](seal) where it is dispatched, through the same stages as a dispatch up to the
//! store (its options, the client middleware, the payload limit), into a row an application's
//! transaction writes; a relay later [relays](relay) the committed rows to Redis, each once
//! (a guard key per job, set in the script that pushes it), and [reports](Report) its figures
//! where the dashboard and the CLI read them.

mod relay;
mod report;
mod seal;

pub use relay::{Outcome, Row, relay};
pub use report::{Report, publish, reports};
pub use seal::{Sealed, seal};

/// How long the guard that makes a relay idempotent is kept in Redis
/// (`gator:{<queue>}:relayed:<jid>`): far longer than a relay's lock on a row outlives the
/// relay (PostgreSQL frees it when the relay's connection ends, or at its
/// idle-in-transaction timeout).
pub const RELAYED_GUARD: std::time::Duration = std::time::Duration::from_secs(3600);
