//! The worker's way into Redis: the store's handles ([`gator_core::store`]), each made here
//! from the worker's client, and the store's types the worker passes around. Only this file
//! and the settle room (`settle/`, which makes the [`gator_core::store::Settle`] handle: every
//! outcome write is its own) name the store or take a connection; every other piece asks for
//! a handle here:
//!
//! - [`fetch`] and [`blocking`]: the fetcher, the watchers and the admission take jobs;
//! - [`run`]: the processor reads what a job needs and records it running, its progress, the
//!   cancel marks;
//! - [`presence`]: the heartbeat, the leases, the catalogue and the launcher;
//! - [`recovery`]: every put-back, and the drains of interrupted hand-offs;
//! - [`upkeep`]: the poller, the pruner, the observer, cron and the queue order.
//!
//! A handle costs what `Client::connection` costs (a clone of the shared connection): make one
//! where it is used.
//!
//! Beside them, the outbox records a job's end writes for its chain or workflow
//! ([`handoff_on_success`], [`handoff_on_death`], [`handoff_on_end`]): pure functions, built by
//! the step that classifies an outcome, written by the settle room.

use gator_core::Client;
use gator_core::store::{Presence, Recovery, Run};

pub use gator_core::store::Recovery as PutBack;
pub use gator_core::store::{
    Ack, Acked, AdmitRequest, Admitted, Batch, CANCEL_POLL, Counts, DEFAULT_KEEP,
    DEFAULT_NAMESPACE, DEFAULT_RETENTION, DeadCap, Description, Done, Fetch, Fetched, Judged,
    Killed, LEASED_TAKE, LeaseState, MAX_ACKS, MAX_ADMIT_ACKS, MAX_BATCH, NextLook, Published,
    SharedStart, StoredEntry, Upkeep, Verdict, WaitRecord, WindowInterval, retention_ms,
    validate_queue,
};
/// What only the admin commands read (the `cli` feature).
#[cfg(feature = "cli")]
pub use gator_core::store::{BrokenKey, FlowStatus};

/// A [`Fetch`] on the client's shared connection.
pub fn fetch(client: &Client) -> Fetch<'_> {
    Fetch::new(client.connection(), client.keys())
}

/// A [`Fetch`] on `conn`, a dedicated connection for a blocking call; get it back with
/// [`Fetch::into_connection`].
pub fn blocking(
    client: &Client,
    conn: gator_core::connection::Dedicated,
) -> Fetch<'_, gator_core::connection::Dedicated> {
    Fetch::new(conn, client.keys())
}

/// A [`Run`] on the client's shared connection.
pub fn run(client: &Client) -> Run<'_> {
    Run::new(client.connection(), client.keys())
}

/// A [`Presence`] on the client's shared connection.
pub fn presence(client: &Client) -> Presence<'_> {
    Presence::new(client.connection(), client.keys())
}

/// A [`Recovery`] on the client's shared connection, with its replica wait.
pub fn recovery(client: &Client) -> Recovery<'_> {
    Recovery::new(client.connection(), client.keys(), client.replica_wait())
}

/// An [`Upkeep`] on the client's shared connection.
pub fn upkeep(client: &Client) -> Upkeep<'_> {
    Upkeep::new(client.connection(), client.keys())
}

/// The outbox record a success of `doc` writes, if it has one (a workflow step's report with
/// `result`, a chain step's link to its next step).
pub fn handoff_on_success(
    doc: &gator_core::payload::PayloadDocument<'_>,
    result: Option<&str>,
    retention: std::time::Duration,
) -> Option<String> {
    gator_core::store::Settle::handoff_on_success(doc, result, retention)
}

/// The outbox record a death writes: a workflow step's report, from its dead-set `entry`.
pub fn handoff_on_death(entry: &str, retention: std::time::Duration) -> Option<String> {
    gator_core::store::Settle::handoff_on_death(entry, retention)
}

/// The outbox record of a workflow step that ended otherwise (`end`: `dead`, `cancelled`).
pub fn handoff_on_end(payload: &str, end: &str, retention: std::time::Duration) -> Option<String> {
    gator_core::store::Settle::handoff_on_end(payload, end, retention)
}
