//! The client that dispatches jobs: one shared multiplexed connection for every short command,
//! and dedicated connections for blocking commands, all through redis-rs. Every one of them
//! has a response timeout and TCP keepalive, so a connection that went silent is noticed and
//! replaced.

mod builder;
mod by_name;
mod cancel;
mod default;
mod deprecated;
pub(crate) mod engine;
mod pending;
pub(crate) mod place;
mod position;
mod register;
mod reply;
mod send;
mod status;
mod ticket;
mod workflow;

pub use builder::ClientBuilder;
pub(crate) use builder::default_chain;
pub use by_name::ByName;
pub(crate) use default::current_default;
pub use default::{default_client, set_default_client};
pub use pending::{Via, dispatch_many};

pub use crate::horizon::SCHEDULE_HORIZON;

use crate::error::Result;
use crate::middleware::DispatchChain;
use crate::shards::ShardCounts;
use crate::store::keys::Keys;
use crate::transport::connection::{Connection, Dedicated, DedicatedOpener, Shared};
use crate::transport::replication::ReplicaWait;
use redis::ConnectionInfo;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the process-wide default client connects unless `GATOR_REDIS_URL` says otherwise.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

/// How long a short command may take before the caller gets an error instead of waiting on
/// (and the shared connection is replaced: it may have gone silent).
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a command on a [dedicated connection](Client::dedicated_connection) may take:
/// block for at most [`MAX_BLOCK`], and the margin covers the round trip. A client that gave up
/// while the server still blocks would leave it to move a job whose reply nobody reads.
pub const DEDICATED_RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);

/// The longest a blocking command on a dedicated connection may ask Redis to block.
pub const MAX_BLOCK: Duration = Duration::from_secs(1);

/// A handle to Gator's data in one Redis under one namespace. Cheap to clone: clones share
/// the connections.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    /// Parsed once from the URL; its `Debug` hides the password.
    info: ConnectionInfo,
    /// The URL with its password redacted, for logs and errors.
    shown_url: String,
    keys: Keys,
    /// Multiplexed: every clone pipelines onto one socket, so concurrent dispatches need no
    /// pool round trip. Never used for blocking commands, which would stall it.
    shared: Arc<Shared>,
    /// Opens the dedicated connections for blocking commands: to one server or to a cluster,
    /// with a response timeout longer than any block they are asked for.
    blocking: DedicatedOpener,
    /// When this client last recorded each queue in the known-queues set.
    registered: Mutex<HashMap<String, Instant>>,
    /// The shard counts of the queues it dispatches to, as last read.
    shards: ShardCounts,
    /// Replicas each enqueue must reach before a dispatch returns.
    wait: Option<ReplicaWait>,
    /// Client middleware, run on each job before it is stored.
    middleware: DispatchChain,
    /// The largest payload it stores, in bytes ([`crate::payload::limit`]).
    max_payload: usize,
    /// Payloads over this many bytes are stored with their arguments compressed
    /// ([`crate::payload::packed`]).
    compress_over: usize,
    /// Payloads whose arguments, as stored, are over this many bytes keep them in a key of
    /// their own ([`crate::payload::aside`]).
    aside_over: usize,
}

/// How often a client re-records a queue it dispatches to in the known-queues set: once per
/// queue would miss a set emptied by hand; every dispatch costs a command each time.
const REGISTER_EVERY: Duration = Duration::from_secs(60);

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.inner.shown_url)
            .field("namespace", &self.inner.keys.namespace())
            .finish()
    }
}

impl Client {
    /// The replicas each enqueue must reach, if this client waits for any
    /// ([`ClientBuilder::wait_for_replicas`]); a worker waits the same way before it deletes
    /// a chain step it handed to another queue.
    pub fn replica_wait(&self) -> Option<&ReplicaWait> {
        self.inner.wait.as_ref()
    }

    /// The largest payload this client stores, in bytes ([`ClientBuilder::max_payload`]).
    pub fn max_payload(&self) -> usize {
        self.inner.max_payload
    }

    /// The client middleware, which the outbox runs as it seals a job ([`crate::outbox`]).
    pub(crate) fn middleware(&self) -> &DispatchChain {
        &self.inner.middleware
    }

    /// The URL this client connects to, its password replaced by `***`: safe to log.
    pub fn redacted_url(&self) -> &str {
        &self.inner.shown_url
    }

    /// Where this client connects: address, database and credentials, parsed from its URL (a
    /// cluster's first node; behind sentinels, the first sentinel, since the master changes).
    pub fn connection_info(&self) -> &ConnectionInfo {
        &self.inner.info
    }

    /// The key names under this client's namespace.
    pub fn keys(&self) -> &Keys {
        &self.inner.keys
    }

    /// The shared multiplexed connection for short commands (never for blocking ones). A
    /// command that takes longer than [`RESPONSE_TIMEOUT`] fails, and the connection is
    /// replaced for every handle.
    pub fn connection(&self) -> Connection {
        self.inner.shared.handle()
    }

    /// A dedicated connection for a blocking command such as a fetch; its commands time out
    /// after [`DEDICATED_RESPONSE_TIMEOUT`], so block for at most [`MAX_BLOCK`]. Hold it for as
    /// long as the loop that uses it: each checkout costs a round trip. After an error, detach
    /// it (drop it) rather than use it again: it may be silent for good.
    pub async fn dedicated_connection(&self) -> Result<Dedicated> {
        Ok(self.inner.blocking.open().await?)
    }

    /// Whether this client works against a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.inner.blocking.is_cluster()
    }

    /// Redis's clock, ms since the Unix epoch (`TIME`): the clock every due time, lease and
    /// dead-set age is measured on.
    pub async fn redis_time(&self) -> Result<u64> {
        crate::store::server::time(&mut self.connection()).await
    }
}
