//! Opening connections: the shared one ([`Opener`], again after a timeout, as a [`Link`]) and
//! the dedicated ones a blocking command holds ([`DedicatedOpener`], [`Dedicated`]), to one
//! server, a master found through Sentinel, or a cluster.

use super::sentinel::Sentinels;
use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
#[cfg(feature = "cluster")]
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

/// The connection itself: to one server, or to a cluster (which routes each command by its
/// key's slot, and follows MOVED and ASK).
#[derive(Clone)]
pub(crate) enum Link {
    Single(ConnectionManager),
    /// To the master the sentinels named. It never reconnects by itself: a reconnection to
    /// the same address could reach an old master that came back (and still says it is one
    /// until the sentinels demote it). A replacement asks the sentinels again.
    Direct(MultiplexedConnection),
    #[cfg(feature = "cluster")]
    Cluster(ClusterConnection),
}

impl Link {
    pub(super) async fn send_packed_command(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            Link::Single(manager) => manager.send_packed_command(cmd).await,
            Link::Direct(connection) => connection.send_packed_command(cmd).await,
            #[cfg(feature = "cluster")]
            Link::Cluster(cluster) => cluster.req_packed_command(cmd).await,
        }
    }

    pub(super) async fn send_packed_commands(
        &mut self,
        pipeline: &Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        match self {
            Link::Single(manager) => manager.send_packed_commands(pipeline, offset, count).await,
            Link::Direct(connection) => {
                connection
                    .send_packed_commands(pipeline, offset, count)
                    .await
            }
            // redis-rs refuses a pipeline whose commands hash to different slots. One that is
            // not a transaction promises no atomicity, only order: send its commands one by
            // one, in order (a global key's SADD still lands before the queue's RPUSH).
            #[cfg(feature = "cluster")]
            Link::Cluster(cluster) if !pipeline.is_transaction() => {
                let mut values = Vec::with_capacity(count);
                for cmd in pipeline.cmd_iter().skip(offset).take(count) {
                    values.push(cluster.req_packed_command(cmd).await?);
                }
                Ok(values)
            }
            #[cfg(feature = "cluster")]
            Link::Cluster(cluster) => cluster.req_packed_commands(pipeline, offset, count).await,
        }
    }

    pub(super) fn get_db(&self) -> i64 {
        match self {
            Link::Single(manager) => manager.get_db(),
            Link::Direct(connection) => connection.get_db(),
            #[cfg(feature = "cluster")]
            Link::Cluster(_) => 0, // a cluster has only database 0
        }
    }
}

/// How to open the shared [`Link`], at start and after a timeout.
// Made once per client and cloned rarely (on a reconnection): boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub(crate) enum Opener {
    Single(redis::Client, ConnectionManagerConfig),
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster::ClusterClient, redis::cluster::ClusterConfig),
    /// To the master the sentinels name when it opens.
    Sentinel(Sentinels, redis::AsyncConnectionConfig),
}

impl Opener {
    pub(super) async fn open(&self) -> RedisResult<Link> {
        match self {
            Opener::Single(client, config) => {
                ConnectionManager::new_with_config(client.clone(), config.clone())
                    .await
                    .map(Link::Single)
            }
            Opener::Sentinel(sentinels, config) => {
                sentinels.connect(config).await.map(Link::Direct)
            }
            #[cfg(feature = "cluster")]
            Opener::Cluster(client, config) => client
                .get_async_connection_with_config(config.clone())
                .await
                .map(Link::Cluster),
        }
    }

    /// Whether a new connection may lead somewhere else than the old one: to the master the
    /// sentinels name now. Then a connection error or a `READONLY` (the master was demoted)
    /// is a reason to open one, where reconnecting to the same address would not help.
    pub(super) fn follows_master(&self) -> bool {
        matches!(self, Opener::Sentinel(..))
    }
}

/// How to open a [`Dedicated`] connection, with its own (longer) response timeout.
// Made once per client and cloned rarely (on a reconnection): boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub(crate) enum DedicatedOpener {
    Single(redis::Client, redis::AsyncConnectionConfig),
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster::ClusterClient, redis::cluster::ClusterConfig),
    /// To the master the sentinels name when it opens.
    Sentinel(Sentinels, redis::AsyncConnectionConfig),
}

impl DedicatedOpener {
    /// A connection of its own (a blocking command's).
    pub(crate) async fn open(&self) -> RedisResult<Dedicated> {
        match self {
            DedicatedOpener::Single(client, config) => client
                .get_multiplexed_async_connection_with_config(config)
                .await
                .map(Dedicated::Single),
            DedicatedOpener::Sentinel(sentinels, config) => {
                sentinels.connect(config).await.map(Dedicated::Single)
            }
            #[cfg(feature = "cluster")]
            DedicatedOpener::Cluster(client, config) => client
                .get_async_connection_with_config(config.clone())
                .await
                .map(Dedicated::Cluster),
        }
    }

    /// Whether it opens connections to a cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        match self {
            DedicatedOpener::Single(..) | DedicatedOpener::Sentinel(..) => false,
            #[cfg(feature = "cluster")]
            DedicatedOpener::Cluster(..) => true,
        }
    }
}

/// A connection of its own for blocking commands (`BLMOVE`): to one server, or to a cluster.
/// Its response timeout is longer than any block it is asked for.
#[derive(Clone)]
pub enum Dedicated {
    /// To one server.
    Single(MultiplexedConnection),
    /// To a cluster: each command goes to the node of its key.
    #[cfg(feature = "cluster")]
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for Dedicated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Dedicated::Single(_) => "Dedicated::Single",
            #[cfg(feature = "cluster")]
            Dedicated::Cluster(_) => "Dedicated::Cluster",
        })
    }
}

impl ConnectionLike for Dedicated {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Dedicated::Single(c) => c.req_packed_command(cmd),
            #[cfg(feature = "cluster")]
            Dedicated::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Dedicated::Single(c) => c.req_packed_commands(pipeline, offset, count),
            #[cfg(feature = "cluster")]
            Dedicated::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Dedicated::Single(c) => c.get_db(),
            #[cfg(feature = "cluster")]
            Dedicated::Cluster(_) => 0,
        }
    }
}
