//! [`Fetch`]: how a worker takes jobs into flight, from a plain queue or a controlled one.

use crate::error::Result;
use crate::store::admit::{self, AdmitRequest, Admitted, SharedStart};
use crate::store::fetched::{Batch, Fetched};
use crate::store::inflight;
use crate::store::keys::Keys;
use crate::transport::connection::Connection;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// Takes jobs into a process's in-flight list: a plain queue's batch or blocking fetch, a
/// controlled queue's admission and its signal. Holds its connection (the shared one, or a
/// dedicated one for the blocking calls) and the key names. For the worker's fetcher and its
/// admission; every job it returns is in flight and must be settled ([`super::Settle`]).
pub struct Fetch<'a, C = Connection> {
    conn: C,
    keys: &'a Keys,
}

impl<'a, C: ConnectionLike + Send> Fetch<'a, C> {
    /// A handle on `conn` (a client's shared connection, or a dedicated one for
    /// [`Fetch::fetch_blocking`] and [`Fetch::wait_for_signal`]) under `keys`.
    pub fn new(conn: C, keys: &'a Keys) -> Self {
        Fetch { conn, keys }
    }

    /// The connection back, to return a dedicated one to its pool.
    pub fn into_connection(self) -> C {
        self.conn
    }

    /// Takes up to `max` jobs of `queue` into `process`'s in-flight list in one call
    /// (`fetch.lua`), if the process holds the queue's lease.
    pub async fn fetch_batch(&mut self, queue: &str, process: &str, max: usize) -> Result<Batch> {
        inflight::fetch_batch(&mut self.conn, self.keys, queue, process, max).await
    }

    /// Takes up to `max` (at most [`inflight::LEASED_TAKE`]) jobs of `queue` into
    /// `process`'s in-flight list with plain `LMOVE`s: for a process whose lease on the queue
    /// surely holds, as the caller measures it (see [`inflight::fetch_leased`]).
    pub async fn fetch_leased(&mut self, queue: &str, process: &str, max: usize) -> Result<Batch> {
        inflight::fetch_leased(&mut self.conn, self.keys, queue, process, max).await
    }

    /// [`Fetch::fetch_batch`] for a process that does not run the jobs named `passed`
    /// (`fetch_except.lua`): those stay in the queue for the workers that do.
    pub async fn fetch_except(
        &mut self,
        (queue, process): (&str, &str),
        max: usize,
        passed: &[String],
    ) -> Result<Batch> {
        let keys = self.keys;
        inflight::fetch_except(&mut self.conn, keys, (queue, process), max, passed).await
    }

    /// Waits up to `timeout` for a job of `queue` and moves it into `process`'s in-flight list
    /// (`BLMOVE`): on a dedicated connection.
    pub async fn fetch_blocking(
        &mut self,
        queue: &str,
        process: &str,
        timeout: Duration,
    ) -> Result<Option<Fetched>> {
        inflight::fetch_blocking(&mut self.conn, self.keys, queue, process, timeout).await
    }

    /// One admission of a controlled queue (`admit.lua`): settles its successes, then starts
    /// what its controls allow.
    pub async fn admit(&mut self, request: &AdmitRequest<'_>) -> Result<Admitted> {
        admit::admit(&mut self.conn, self.keys, request).await
    }

    /// Takes a start of the shared rate limiter `name` for `cost`, on its own slot.
    pub async fn take_shared(&mut self, name: &str, cost: u32) -> Result<SharedStart> {
        admit::take_shared(&mut self.conn, self.keys, name, cost).await
    }

    /// Waits up to `timeout` for controlled `queue`'s signal (a job parked, units released, a
    /// resume): on a dedicated connection. Whether a signal came.
    pub async fn wait_for_signal(&mut self, queue: &str, timeout: Duration) -> Result<bool> {
        admit::wait_for_signal(&mut self.conn, self.keys, queue, timeout).await
    }
}
