//! Gator: background jobs for Rust, backed by Redis, in the style of Sidekiq.
//!
//! Write a function, mark it `#[job]`, dispatch it from anywhere, and run `gator-worker`:
//!
//! ```no_run
//! use gator_core::job;
//!
//! #[job(queue = "mail")]
//! async fn send_email(to: String, subject: String) -> Result<(), std::io::Error> {
//!     println!("mailing {to}: {subject}");
//!     Ok(())
//! }
//!
//! # async fn demo() -> gator_core::Result<()> {
//! // Uses GATOR_REDIS_URL (default redis://127.0.0.1:6379).
//! let jid = SendEmail::dispatch("ada@example.com".into(), "hello".into()).await?;
//! SendEmail::call("bob@example.com".into(), "later".into())
//!     .queue("slow-mail")
//!     .after(std::time::Duration::from_secs(60)).dispatch()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! This crate holds the job trait, the client, the wire format and every Redis key and Lua
//! script (`store`); `gator-worker` runs the jobs. The wire format is documented in
//! `docs/wire-format.md` so that other languages can enqueue and inspect.

// A published crate: every public item is documented (the workspace only warns).
#![deny(missing_docs)]

pub mod admin;
pub mod cancel;
pub mod catalogue;
pub mod chain;
pub mod client;
pub mod clock;
pub mod context;
pub mod cron;
pub mod error;
pub mod expiry;
pub mod failure;
pub mod flow;
pub mod horizon;
pub mod job;
pub mod middleware;
#[cfg(feature = "otel")]
pub mod otel;
pub mod outbox;
pub mod payload;
pub mod registry;
pub mod reply;
pub mod retry;
pub mod shards;
pub mod status;
pub mod store;
pub mod testing;
pub mod transport;
pub mod unique;
pub mod wire;
pub mod workflow;

pub use admin::Admin;
pub use cancel::Cancellation;
pub use chain::Chain;
pub use client::{Client, ClientBuilder, default_client, dispatch_many, set_default_client};
pub use connection::Connection;
pub use context::durable;
pub use context::{CancelReason, Context, JobInfo, State, StateMap, StateNeed};
pub use endpoint::TlsFiles;
pub use error::{Error, Result};
pub use gator_macros::job;
pub use job::{DueTime, Execution, IntoJobResult, Job, JobError, JobResult, PendingJob};
pub use payload::Payload;
pub use registry::{JobRegistration, Registry};
pub use replication::ReplicaWait;
pub use status::{ExpectedStart, JobDetails, JobStatus, ParkedPlace, Position, Progress};
pub use store::sets::{SetEntry, SetKind};
pub use transport::{connection, endpoint, replication, sentinel};
pub use unique::{Dispatched, UniqueOptions, UniqueUntil};
pub use workflow::{OnFailure, Step, Workflow};

/// Cancels a [`Context`]: re-exported so no extra crate is needed to make one.
pub use tokio_util::sync::CancellationToken;

/// Re-exported for the code `#[job]` generates; not part of the API.
#[doc(hidden)]
pub use inventory as __inventory;
