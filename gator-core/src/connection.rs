//! The shared multiplexed connection, replaced when it stops answering, and the TCP settings
//! every Gator connection uses.
//!
//! A connection can go silent without being closed: a NAT or load balancer drops an idle
//! flow, a failover leaves a half-open socket. redis-rs's `ConnectionManager` reconnects when
//! the socket reports an error, but a silent socket reports nothing: every command times out,
//! forever. So a command that times out here replaces the connection under every clone, and
//! TCP keepalive lets the kernel notice a dead peer of an idle socket.

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::io::tcp::{TcpSettings, socket2::TcpKeepalive};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// An idle socket is probed after this long without traffic, then every
/// [`KEEPALIVE_INTERVAL`], and closed after [`KEEPALIVE_RETRIES`] unanswered probes: a peer
/// that vanished is noticed in about 25 s, inside a worker's 20 s lease renewed every 5 s.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
/// The time between keepalive probes.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// Unanswered probes before the kernel closes the socket.
pub const KEEPALIVE_RETRIES: u32 = 3;
/// Data sent and not acknowledged for this long closes the socket (`TCP_USER_TIMEOUT`): a
/// request to a peer that vanished fails instead of waiting for retransmissions to give up
/// (about 15 minutes by default).
pub const UNACKED_LIMIT: Duration = Duration::from_secs(20);

/// The TCP settings of every connection Gator opens: keepalive and the unacknowledged-data
/// limit above.
pub fn tcp_settings() -> TcpSettings {
    let keepalive = TcpKeepalive::new().with_time(KEEPALIVE_IDLE);
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    let keepalive = keepalive
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    let settings = TcpSettings::default().set_keepalive(keepalive);
    #[cfg(target_os = "linux")]
    let settings = settings.set_user_timeout(UNACKED_LIMIT);
    settings
}

/// A handle to a client's shared multiplexed connection, for short commands. Clones share one
/// socket; when a command on it times out, the socket is replaced for every clone.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    generation: u64,
    manager: ConnectionManager,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// What every handle shares: the current connection and how to make a new one.
pub(crate) struct Shared {
    client: redis::Client,
    config: ConnectionManagerConfig,
    /// Bumped on each replacement, so a handle sees a new connection with one atomic load.
    generation: AtomicU64,
    current: RwLock<(u64, ConnectionManager)>,
    /// One replacement at a time: a burst of timeouts opens one new connection.
    replacing: AtomicBool,
}

impl Shared {
    /// Connects (failing if Redis cannot be reached) and keeps what a replacement needs.
    pub(crate) async fn connect(
        client: redis::Client,
        config: ConnectionManagerConfig,
    ) -> RedisResult<Arc<Shared>> {
        let manager = ConnectionManager::new_with_config(client.clone(), config.clone()).await?;
        Ok(Arc::new(Shared {
            client,
            config,
            generation: AtomicU64::new(0),
            current: RwLock::new((0, manager)),
            replacing: AtomicBool::new(false),
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

    fn current(&self) -> (u64, ConnectionManager) {
        // A poisoned lock only means a panic while swapping two whole values.
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        (current.0, current.1.clone())
    }

    /// Replaces generation `stale` with a new connection in the background, unless another
    /// caller already is: the caller goes on at once (a connection to a Redis that is paused
    /// could take seconds to open, and the next lease renewal must not wait for it). If Redis
    /// cannot be reached now, the old connection stays and the next timeout tries again.
    fn replace(self: &Arc<Shared>, stale: u64) {
        if self.generation.load(Ordering::Acquire) != stale
            || self.replacing.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let shared = self.clone();
        tokio::spawn(async move {
            let made =
                ConnectionManager::new_with_config(shared.client.clone(), shared.config.clone())
                    .await;
            match made {
                Ok(manager) if shared.generation.load(Ordering::Acquire) == stale => {
                    let mut current = shared.current.write().unwrap_or_else(|e| e.into_inner());
                    *current = (stale + 1, manager);
                    shared.generation.store(stale + 1, Ordering::Release);
                    tracing::warn!("redis did not answer in time: replaced the shared connection");
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "redis did not answer in time, and a new connection failed too; trying again on the next timeout");
                }
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
    fn after<T>(&mut self, result: RedisResult<T>) -> RedisResult<T> {
        if let Err(e) = &result
            && e.is_timeout()
        {
            self.shared.replace(self.generation);
        }
        result
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

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            self.refresh();
            let mut result = self.manager.send_packed_command(cmd).await;
            if never_sent(&result) {
                result = self.manager.send_packed_command(cmd).await;
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
            self.after(result)
        })
    }

    fn get_db(&self) -> i64 {
        self.manager.get_db()
    }
}
