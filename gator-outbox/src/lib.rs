//! Gator's transactional outbox on PostgreSQL: a job enqueued inside the application's own
//! transaction, and relayed to Redis exactly once after that transaction commits. Reached as
//! `gator::outbox` with the `postgres` feature; the guide is "Enqueue in a transaction"
//! (`docs/guide/outbox.md`).
//!
//! In an app, through `gator` (here by this crate's own names, `gator_outbox` for
//! `gator::outbox`):
//!
//! ```no_run
//! # #[gator_core::job] async fn send_email(to: String) -> Result<(), gator_core::JobError> { let _ = to; Ok(()) }
//! use gator_outbox::{EnqueueIn, sqlx};
//! # async fn run(pool: sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
//! gator_outbox::migrate(&pool).await?;
//! let mut tx = pool.begin().await?;
//! // ... the application's own writes ...
//! let jid = SendEmail::call("ada@example.com".into()).enqueue_in(&mut *tx).await?;
//! tx.commit().await?; // the job exists from here on; a rollback leaves nothing
//! # Ok(()) }
//! ```
//!
//! - [`EnqueueIn::enqueue_in`] writes the job into the `gator_outbox` table through the
//!   caller's connection or transaction (the job sealed by [`gator_core::outbox::seal`]: every
//!   dispatch option, the client middleware, the payload limit), and [`enqueue_many_in`] many
//!   in one statement.
//! - [`Relay`] moves committed rows into Redis: woken by `LISTEN/NOTIFY` (a slow poll as a
//!   fallback), rows taken in batches `FOR UPDATE SKIP LOCKED` so several relays share the
//!   work, each row deleted only after Redis has its job, and pushed once by its jid however
//!   often it is relayed. `gator-worker --outbox URL` runs one in every worker process.
//! - [`migrate`] applies the schema; [`status`], [`dead`], [`retry`] and [`discard`] are what
//!   `gator-worker outbox` shows and does.

mod batch;
mod enqueue;
mod error;
mod inspect;
mod relay;
mod schema;

pub use enqueue::{EnqueueIn, enqueue_many_in};
pub use error::{Error, Result};
pub use inspect::{DeadRow, Status, dead, discard, retry, retry_all, status};
pub use relay::{Relay, RelayConfig};
pub use schema::{CHANNEL, MIGRATION, TABLE, migrate};

/// The sqlx this crate is built on (0.9, PostgreSQL, tokio): an app that uses it for its own
/// queries passes the same `Transaction` and `PgConnection` types.
pub use sqlx;
