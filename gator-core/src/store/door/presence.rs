//! [`Presence`]: what a worker process holds and announces: its heartbeat, its queue leases,
//! its job catalogue.

use crate::error::Result;
use crate::store::catalogue::{self, Published};
use crate::store::keys::Keys;
use crate::store::lease::{self, LeaseState};
use crate::store::processes::{self, Beat};
use crate::store::server::{self, Server};
use crate::transport::connection::Connection;
use std::time::Duration;

/// A process's presence in Redis, each part held by a lease that expires on Redis's clock: its
/// heartbeat in the process registry, its lease on each queue it fetches from (which recovery
/// honours), and the jobs it runs (the catalogue). Holds the shared connection and the key
/// names. For the worker's heartbeat, leases, catalogue and launcher.
pub struct Presence<'a> {
    conn: Connection,
    keys: &'a Keys,
}

impl<'a> Presence<'a> {
    /// A handle on a client's shared connection `conn`, under `keys`.
    pub fn new(conn: Connection, keys: &'a Keys) -> Self {
        Presence { conn, keys }
    }

    /// Records process `id` (described by `info`, JSON) alive until `ttl` from now; counts
    /// the live processes.
    pub async fn beat(&mut self, id: &str, info: &str, ttl: Duration) -> Result<Beat> {
        processes::beat(&mut self.conn, self.keys, id, info, ttl).await
    }

    /// Removes process `id` from the registry (a clean stop).
    pub async fn remove_process(&mut self, id: &str) -> Result<()> {
        processes::remove(&mut self.conn, self.keys, id).await
    }

    /// Takes or renews `process`'s lease on `queue` for `ttl`; its state and Redis's clock.
    pub async fn renew_lease(
        &mut self,
        queue: &str,
        process: &str,
        ttl: Duration,
    ) -> Result<(LeaseState, u64)> {
        lease::renew(&mut self.conn, self.keys, queue, process, ttl).await
    }

    /// [`Presence::renew_lease`] for each of `queues`.
    pub async fn renew_leases(
        &mut self,
        queues: &[String],
        process: &str,
        ttl: Duration,
    ) -> Result<(Vec<LeaseState>, u64)> {
        lease::renew_many(&mut self.conn, self.keys, queues, process, ttl).await
    }

    /// Publishes worker `worker`'s `jobs` (name, signature) on `queues` for `lease_ms`, at most
    /// `max_jobs` of them (`catalogue_publish.lua`).
    pub async fn publish_catalogue(
        &mut self,
        (worker, lease_ms): (&str, u64),
        queues: &[String],
        max_jobs: usize,
        jobs: &[(String, String)],
    ) -> Result<Published> {
        let keys = self.keys;
        catalogue::publish(
            &mut self.conn,
            keys,
            worker,
            lease_ms,
            queues,
            max_jobs,
            jobs,
        )
        .await
    }

    /// Withdraws worker `worker`'s jobs `names` from the catalogue (a clean stop).
    pub async fn withdraw_catalogue(&mut self, worker: &str, names: &[String]) -> Result<()> {
        catalogue::withdraw(&mut self.conn, self.keys, worker, names).await
    }

    /// What the server is: version, mode, role.
    pub async fn identify(&mut self) -> Result<Server> {
        server::identify(&mut self.conn).await
    }
}
