//! Gator: background jobs for Rust, backed by Redis, in the style of Sidekiq. This is the one
//! crate an app depends on (with `serde` and `tokio`): it re-exports the job macro and runtime
//! of `gator-core`, the worker of `gator-worker` and, with the `web` feature, the dashboard of
//! `gator-web`.
//!
//! Write a function, mark it `#[job]`, dispatch it from anywhere:
//!
//! ```no_run
//! use gator::job;
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! pub struct Order {
//!     pub id: u64,
//!     pub cents: u64,
//! }
//!
//! #[job(queue = "high")]
//! async fn charge_card(order: Order) -> Result<(), String> {
//!     println!("charging {} cents for order {}", order.cents, order.id);
//!     Ok(())
//! }
//!
//! # async fn demo() -> gator::Result<()> {
//! // Uses GATOR_REDIS_URL (default redis://127.0.0.1:6379).
//! let jid = ChargeCard::dispatch(Order { id: 7, cents: 1999 }).await?;
//! # let _ = jid; Ok(()) }
//! ```
//!
//! and run them in a worker binary whose `main` is one line:
//!
//! ```no_run
//! // src/bin/worker.rs
//! use my_app as _; // links the crate that defines the #[job]s
//! fn main() -> std::process::ExitCode {
//!     gator::main()
//! }
//! # mod my_app {}
//! ```
//!
//! # Where things are
//! - At the top: everything of `gator-core` (the [`job`] macro, [`Client`], [`Context`],
//!   [`State`], [`Job`], [`Result`] and [`Error`], [`Chain`], [`Workflow`], the dispatch types
//!   such as [`PendingJob`] and [`DueTime`], the [`testing`] mode, [`admin`] ...), and the
//!   worker's entry points: [`main`], [`main_with`], [`Worker`], [`WorkerBuilder`].
//! - [`worker`]: the rest of the worker (`gator-worker`): middleware, configuration, the
//!   background loops.
//! - `web` (the `web` feature): the dashboard and HTTP API (`gator-web`).
//!
//! # Features
//! - `cli` (on by default): the admin subcommands of a worker binary built on [`main`]
//!   (`worker dead list`, `worker queue pause` ...).
//! - `web`: the dashboard, as `gator::web`.
//! - `otel`: trace context from dispatch to run (OpenTelemetry `traceparent`).

#![deny(missing_docs)]

pub use gator_core::*;

/// Turns a fn into a Gator job; see the options and what it generates at
/// [`gator_core::job`](macro@gator_core::job). This is the same attribute, except that the
/// code it generates names the runtime through this crate, so an app needs no `gator-core`
/// dependency of its own.
pub use gator_macros::job_in_gator as job;

/// The worker (`gator-worker`): configured in code ([`WorkerBuilder`]), or a whole worker
/// program ([`main`]); its middleware, configuration and background loops.
pub use gator_worker as worker;

pub use gator_worker::{Worker, WorkerBuilder, main, main_with};

/// The web dashboard and HTTP API (`gator-web`): mount [`web::router`] in an axum app or run
/// [`web::serve`].
#[cfg(feature = "web")]
pub use gator_web as web;

/// The transactional outbox (`gator-outbox`, the `postgres` feature): enqueue a job inside a
/// PostgreSQL transaction with [`outbox::EnqueueIn::enqueue_in`], relayed to Redis exactly once
/// after the commit by [`outbox::Relay`] (`gator-worker --outbox URL`).
#[cfg(feature = "postgres")]
pub use gator_outbox as outbox;

/// What the code `#[job]` generates names the runtime by; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use gator_core as core;
}
