//! The shared multiplexed connection, replaced when it stops answering; the TCP settings every
//! Gator connection uses (`tcp.rs`'s, handed on here).
//!
//! A connection can go silent without being closed: a NAT or load balancer drops an idle
//! flow, a failover leaves a half-open socket. redis-rs's `ConnectionManager` reconnects when
//! the socket reports an error, but a silent socket reports nothing: every command times out,
//! forever. So a command that times out here replaces the connection under every clone, and
//! TCP keepalive lets the kernel notice a dead peer of an idle socket.

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

pub use super::tcp::{
    KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_RETRIES, UNACKED_LIMIT, tcp_settings,
};

/// A handle to a client's shared multiplexed connection, for short commands. Clones share one
/// socket (one per node on a cluster); when a command on it times out, it is replaced for every
/// clone.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    generation: u64,
    manager: Link,
}

pub use super::open::Dedicated;
use super::open::Link;
pub(crate) use super::open::{DedicatedOpener, Opener};

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// What every handle shares: the current connection and how to make a new one.
pub(crate) struct Shared {
    opener: Opener,
    /// Bumped on each replacement, so a handle sees a new connection with one atomic load.
    generation: AtomicU64,
    current: RwLock<(u64, Link)>,
    /// One replacement at a time: a burst of timeouts opens one new connection.
    replacing: AtomicBool,
    /// When the last replacement failed, if the last one did: while the sentinels name no
    /// reachable master, every command fails at once, and each must not ask them again.
    failed_at: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Shared {
    /// Connects (failing if Redis cannot be reached) and keeps what a replacement needs.
    pub(crate) async fn connect(opener: Opener) -> RedisResult<Arc<Shared>> {
        let manager = opener.open().await?;
        Ok(Arc::new(Shared {
            opener,
            generation: AtomicU64::new(0),
            current: RwLock::new((0, manager)),
            replacing: AtomicBool::new(false),
            failed_at: std::sync::Mutex::new(None),
        }))
    }

    /// A handle on the current connection.
    pub(crate) fn handle(self: &Arc<Shared>) -> Connection {
        let (generation, manager) = self.current();
        Connection {
            shared: self.clone(),
            generation,
            manager,
        }
    }

    fn lock_failed_at(&self) -> std::sync::MutexGuard<'_, Option<std::time::Instant>> {
        self.failed_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn current(&self) -> (u64, Link) {
        // A poisoned lock only means a panic while swapping two whole values.
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        (current.0, current.1.clone())
    }

    /// Replaces generation `stale` with a new connection in the background, unless another
    /// caller already is: the caller goes on at once (a connection to a Redis that is paused
    /// could take seconds to open, and the next lease renewal must not wait for it). If Redis
    /// cannot be reached now, the old connection stays and the next timeout tries again.
    fn replace(self: &Arc<Shared>, stale: u64, why: Why) {
        if self.generation.load(Ordering::Acquire) != stale
            || self
                .lock_failed_at()
                .is_some_and(|at| at.elapsed() < RETRY_GAP)
            || self.replacing.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let shared = self.clone();
        tokio::spawn(async move {
            let made = shared.opener.open().await;
            // The first failure of an outage is the one after a success (or none yet).
            let first_failure = {
                let mut failed_at = shared.lock_failed_at();
                let first = failed_at.is_none();
                *failed_at = made.is_err().then(std::time::Instant::now);
                first
            };
            match made {
                Ok(manager) if shared.generation.load(Ordering::Acquire) == stale => {
                    let mut current = shared.current.write().unwrap_or_else(|e| e.into_inner());
                    *current = (stale + 1, manager);
                    shared.generation.store(stale + 1, Ordering::Release);
                    match why {
                        Why::Silent => tracing::warn!(
                            "redis did not answer in time: replaced the shared connection"
                        ),
                        Why::MasterLost => tracing::warn!(
                            "the master was lost: reconnected to the master the sentinels name now"
                        ),
                    }
                }
                Ok(_) => {}
                Err(e) => match why {
                    Why::Silent => {
                        tracing::warn!(error = %e, "redis did not answer in time, and a new connection failed too; trying again on the next timeout")
                    }
                    // Once per outage: while a failover is under way this fails for seconds.
                    Why::MasterLost if first_failure => {
                        tracing::warn!(error = %e, "the master was lost, and the sentinels name no reachable master yet; trying again on the next error")
                    }
                    Why::MasterLost => {
                        tracing::debug!(error = %e, "the sentinels still name no reachable master")
                    }
                },
            }
            shared.replacing.store(false, Ordering::Release);
        });
    }
}

impl Connection {
    /// Moves this handle to the newest connection if one replaced its own.
    fn refresh(&mut self) {
        if self.shared.generation.load(Ordering::Acquire) != self.generation {
            (self.generation, self.manager) = self.shared.current();
        }
    }

    /// After a failed request: a timeout means the socket may be silent for good, so replace it.
    /// Behind sentinels, so does an error that says the master is gone or demoted.
    fn after<T>(&mut self, result: RedisResult<T>) -> RedisResult<T> {
        if let Err(e) = &result {
            if e.is_timeout() {
                self.shared.replace(self.generation, Why::Silent);
            } else if self.shared.opener.follows_master() && master_lost(e) {
                self.shared.replace(self.generation, Why::MasterLost);
            }
        }
        result
    }

    /// After an answer: behind sentinels, a `READONLY` among the replies (a server error comes
    /// back as a value, and becomes an `Err` only when the caller converts it) means this
    /// server was demoted.
    fn after_replies<'v>(&self, replies: impl IntoIterator<Item = &'v Value>) {
        if self.shared.opener.follows_master() && replies.into_iter().any(demoted) {
            self.shared.replace(self.generation, Why::MasterLost);
        }
    }
}

/// How long after a failed replacement the next may be tried.
const RETRY_GAP: Duration = Duration::from_millis(200);

/// Why the shared connection is replaced.
#[derive(Clone, Copy)]
enum Why {
    /// A request timed out: the socket may be silent for good.
    Silent,
    /// The master went away or became a replica (behind sentinels).
    MasterLost,
}

/// Whether `e` says the server this connection reaches is no longer a master to write to: it
/// cannot be reached, it dropped the connection, or it is a replica now (`READONLY`, or
/// `MASTERDOWN` from a replica that lost its master).
fn master_lost(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || e.code().is_some_and(is_demotion)
}

/// Whether an error code says the server is no master to write to (any more).
fn is_demotion(code: &str) -> bool {
    matches!(code, "READONLY" | "MASTERDOWN")
}

/// Whether a reply is (or holds, as `EXEC`'s does) a `READONLY` or `MASTERDOWN` error.
fn demoted(reply: &Value) -> bool {
    match reply {
        Value::ServerError(e) => is_demotion(e.code()),
        Value::Array(items) => items.iter().any(demoted),
        _ => false,
    }
}

/// Whether a request failed before any of it could reach Redis: the socket was known closed
/// (Redis restarted, or closed an idle connection) when it was written. Sent again once, on
/// the connection the manager opens in its place, it cannot run twice.
fn never_sent<T>(result: &RedisResult<T>) -> bool {
    let Err(e) = result else { return false };
    // redis-rs keeps the io::Error behind an `Arc<dyn Error>`, and that Arc is the source.
    type Shared = Arc<dyn std::error::Error + Send + Sync>;
    std::error::Error::source(e)
        .and_then(|source| source.downcast_ref::<Shared>())
        .and_then(|shared| shared.downcast_ref::<std::io::Error>())
        .is_some_and(|io| {
            matches!(
                io.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::NotConnected
            )
        })
}

impl Connection {
    /// Sends `cmd`, built by `store`, to the node that holds `key`, and hands back its raw
    /// reply for `store` to read. On one server that is the server; on a cluster, the master of
    /// `key`'s slot. A per-connection command (`WAIT`, which counts the writes of that node's
    /// connection) must go where the write went: without a key, the cluster client would send
    /// it to every master.
    pub async fn send_to_node_of(&mut self, key: &str, cmd: &Cmd) -> RedisResult<Value> {
        self.refresh();
        let result = match &mut self.manager {
            #[cfg(feature = "cluster")]
            Link::Cluster(cluster) => {
                use redis::cluster_routing::{
                    Route, RoutingInfo, SingleNodeRoutingInfo, Slot, SlotAddr,
                };
                let route = Route::with_slot(Slot::for_key(key), SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                cluster.route_command(cmd.clone(), routing).await
            }
            link => {
                let _ = key; // one server holds every key
                link.send_packed_command(cmd).await
            }
        };
        self.after(result)
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            self.refresh();
            let mut result = self.manager.send_packed_command(cmd).await;
            if never_sent(&result) {
                result = self.manager.send_packed_command(cmd).await;
            }
            if let Ok(reply) = &result {
                self.after_replies([reply]);
            }
            self.after(result)
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.refresh();
            let mut result = self
                .manager
                .send_packed_commands(pipeline, offset, count)
                .await;
            if never_sent(&result) {
                result = self
                    .manager
                    .send_packed_commands(pipeline, offset, count)
                    .await;
            }
            if let Ok(replies) = &result {
                self.after_replies(replies);
            }
            self.after(result)
        })
    }

    fn get_db(&self) -> i64 {
        self.manager.get_db()
    }
}
