//! [`Upkeep`]: the periodic chores of a worker process and what it reads to plan them.

use crate::error::Result;
use crate::payload::Payload;
use crate::store::cron::{self, Fire, StoredEntry};
use crate::store::keys::Keys;
use crate::store::schedule::{self, Promoted};
use crate::store::stats::{self, Counts};
use crate::store::{finished, flow, queue, server, shards};
use crate::transport::connection::Connection;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The chores every worker process shares: promoting due jobs, trimming finished records,
/// flushing counters, firing periodic jobs, registering queues, and the reads that plan them
/// (known, sharded and controlled queues, the server's memory). Holds the shared connection and
/// the key names. For the worker's poller, pruner, observer, cron, queue order and launcher.
pub struct Upkeep<'a> {
    conn: Connection,
    keys: &'a Keys,
}

impl<'a> Upkeep<'a> {
    /// A handle on a client's shared connection `conn`, under `keys`.
    pub fn new(conn: Connection, keys: &'a Keys) -> Self {
        Upkeep { conn, keys }
    }

    /// Moves `queue`'s due scheduled and retry jobs to the queue (`promote_due.lua`).
    pub async fn promote_due(&mut self, queue: &str) -> Result<Promoted> {
        schedule::promote_due(&mut self.conn, self.keys, queue).await
    }

    /// Trims `queue`'s finished records to `keep`, and older than `retention`; how many went.
    pub async fn trim_finished(
        &mut self,
        queue: &str,
        keep: usize,
        retention: Duration,
    ) -> Result<usize> {
        finished::trim(&mut self.conn, self.keys, queue, keep, retention).await
    }

    /// Adds `counts` to `queue`'s counters and history at `now_ms` (Redis time).
    pub async fn flush_stats(&mut self, queue: &str, counts: Counts, now_ms: u64) -> Result<()> {
        stats::flush(&mut self.conn, self.keys, queue, counts, now_ms).await
    }

    /// Every periodic job stored.
    pub async fn cron_entries(&mut self) -> Result<Vec<StoredEntry>> {
        cron::list(&mut self.conn, self.keys).await
    }

    /// Fires periodic job `name` for `tick` (once per tick across the fleet), dispatching
    /// `payload` (`cron_fire.lua`).
    pub async fn fire_cron(
        &mut self,
        name: &str,
        tick: Option<u64>,
        payload: &Payload,
    ) -> Result<Fire> {
        cron::fire(&mut self.conn, self.keys, name, tick, payload).await
    }

    /// Adds `queues` to the known set.
    pub async fn register_queues(&mut self, queues: &[String]) -> Result<()> {
        queue::register(&mut self.conn, self.keys, queues).await
    }

    /// Every known queue (the known set).
    pub async fn known_queues(&mut self) -> Result<Vec<String>> {
        queue::known(&mut self.conn, self.keys).await
    }

    /// The shard count of every sharded queue.
    pub async fn shards(&mut self) -> Result<HashMap<String, u32>> {
        shards::all(&mut self.conn, self.keys).await
    }

    /// The queues known to be under flow control.
    pub async fn controlled(&mut self) -> Result<HashSet<String>> {
        flow::controlled(&mut self.conn, self.keys).await
    }

    /// The server's `INFO` `sections`, one text per node.
    pub async fn info(&mut self, sections: &[&str]) -> Result<Vec<String>> {
        server::info(&mut self.conn, sections).await
    }
}
