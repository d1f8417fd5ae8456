//! Reading and repairing the fleet: [`Admin`], beside [`crate::client::Client`] as Asynq keeps its
//! `Inspector` apart from its `Client`. The client connects and dispatches; an `Admin` (made
//! from a client, sharing its connections) reads and changes what is already in Redis: the
//! sets and their jobs ([`sets`]), queues and their settings ([`queues`], [`flow`],
//! [`limiters`]), periodic jobs ([`cron`]), processes, history, chains and workflows in flight
//! ([`journeys`]), and search. The dashboard, the HTTP API and `gator-worker`'s commands are
//! thin shells over it.
//!
//! ```no_run
//! # async fn demo(client: gator_core::Client) -> gator_core::Result<()> {
//! use gator_core::Admin;
//! use gator_core::admin::HistorySpan;
//! let admin = Admin::new(client);
//! let overview = admin.overview().await?;
//! println!("{} processed, {} failed, {} dead", overview.processed, overview.failed, overview.dead);
//! for queue in admin.queue_infos().await? {
//!     println!("{}: {} waiting, oldest {:?} ms", queue.name, queue.size, queue.latency_ms);
//! }
//! let last_hour = admin.history(HistorySpan::Hour, None).await?;
//! # Ok(()) }
//! ```
//!
//! # What it costs
//! Every read is bounded by the number of queues and live processes, never by the number of
//! jobs: a page of a set ([`Admin::set_page`]) reads at most its size from each queue however
//! deep it is, and [`Admin::search`] examines at most its `budget` entries per call; both
//! return a cursor to go on from. Counts of controlled queues ([`crate::flow`]) cost one
//! command per parking key.
//!
//! # Which queues
//! A method that takes `queue: Option<&str>` acts on that queue (validated first, with its
//! shards if it is sharded) or, with `None`, on every known queue ([`Admin::known_queues`]).
//!
//! # Clocks
//! Ages (latency, heartbeat age, running time) are measured against Redis's clock. A job's
//! `enqueued_at` was stamped by its producer (from its estimate of Redis time for scheduled
//! jobs), so a latency is as good as that producer's clock: it is shown, never acted on.

pub mod bulk;
pub mod cron;
pub mod durable;
pub mod flow;
mod history;
pub mod journeys;
pub mod limiters;
mod outbox;
mod overview;
pub mod preview;
mod processes;
pub mod queues;
pub mod scaling;
mod search;
mod search_terms;
mod set_pages;
pub mod sets;

pub use bulk::{Bulk, BulkAction, MAX_BULK};
pub use cron::{Fire, Periodic};
pub use durable::{DurableState, StepShown};
pub use history::{HistoryPoint, HistorySpan};
pub use journeys::JourneyInFlight;
pub use overview::{Overview, RedisInfo};
pub use processes::{ProcessInfo, RunningJob};
pub use queues::QueueInfo;
pub use scaling::{QueueScaling, Scaling, ScalingPolicy};
pub use search::{DEFAULT_BUDGET, Place, SearchField, SearchHit, SearchPage, SearchQuery};
pub use set_pages::{MAX_SET_PAGE, SetPage};
pub use sets::MAX_MERGED_DEPTH;
// What the dashboard and the HTTP API check and show beside `Admin`'s answers: through this
// door, not the store's rooms.
pub use crate::store::{FlowStatus, validate_queue, validate_stored_queue};

use crate::client::Client;
use crate::error::Result;
use crate::store;
use crate::store::keys::Keys;
use crate::transport::connection::Connection;
use std::collections::HashMap;

/// Reads and repairs what is in Redis: see the [module docs](self). Cheap to clone; made from
/// a [`Client`], whose connections it shares.
#[derive(Clone, Debug)]
pub struct Admin {
    client: Client,
}

impl Admin {
    /// An admin over `client`'s Redis and namespace.
    pub fn new(client: Client) -> Admin {
        Admin { client }
    }

    /// The client it works through (to dispatch, or to read one job's status).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Fills `payload`'s arguments from its side key if they are stored aside
    /// ([`crate::payload::aside`]): one `GET`, decoded up to the decode limit. Listings and
    /// search do not (their arguments show `null`, with `packing.aside`); the job's page and
    /// `job show` do. A payload filled is still written back with its marker.
    pub async fn load_aside(&self, payload: &mut crate::payload::Payload) -> Result<()> {
        store::aside::load(&mut self.connection(), self.keys(), payload).await
    }

    fn connection(&self) -> Connection {
        self.client.connection()
    }

    fn keys(&self) -> &Keys {
        self.client.keys()
    }

    async fn redis_time(&self) -> Result<u64> {
        self.client.redis_time().await
    }

    /// The known-queues set, sorted: the queues clients dispatched to and workers serve.
    /// Names that are not valid queue names (written by hand or by another tool) are left
    /// out: their keys would carry no hash tag.
    pub async fn known_queues(&self) -> Result<Vec<String>> {
        self.client.known_queues().await
    }

    /// How many jobs wait in `queue`'s list.
    pub async fn queue_len(&self, queue: &str) -> Result<usize> {
        store::queue::len(&mut self.connection(), self.keys(), queue).await
    }

    /// Splits `queue` into `count` shards (1: one list again), kept in Redis for every
    /// producer and worker (see [`crate::shards`] for what happens to queued jobs).
    pub async fn set_shards(&self, queue: &str, count: u32) -> Result<()> {
        store::keys::validate_queue(queue)?;
        crate::shards::validate_count(count)?;
        store::shards::set(&mut self.connection(), self.keys(), queue, count).await
    }

    /// Every sharded queue and its number of shards.
    pub async fn shard_counts(&self) -> Result<HashMap<String, u32>> {
        store::shards::all(&mut self.connection(), self.keys()).await
    }

    /// `Some(queue)`, validated, with its shards if it is sharded (`default` covers
    /// `default#0`, `default#1`, … as the known-queues set lists them; `default#1` is that
    /// shard alone), or every known queue.
    pub(crate) async fn target_queues(&self, queue: Option<&str>) -> Result<Vec<String>> {
        match queue {
            Some(queue) => {
                validate_stored_queue(queue)?;
                self.with_shards(queue).await
            }
            None => self.known_queues().await,
        }
    }

    /// `queue` and, if it is sharded, the shards the known-queues set lists for it.
    pub(crate) async fn with_shards(&self, queue: &str) -> Result<Vec<String>> {
        let mut queues = vec![queue.to_owned()];
        if crate::shards::logical_queue(queue) == queue {
            queues.extend(
                self.known_queues()
                    .await?
                    .into_iter()
                    .filter(|q| q != queue && crate::shards::logical_queue(q) == queue),
            );
        }
        Ok(queues)
    }
}
