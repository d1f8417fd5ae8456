//! [`ClientBuilder`]: what a client is told before it connects (namespace, TLS, cluster,
//! replicas, middleware, the payload limit), and connecting.

use super::{
    CONNECT_TIMEOUT, Client, DEDICATED_RESPONSE_TIMEOUT, DEFAULT_REDIS_URL, Inner, RESPONSE_TIMEOUT,
};
use crate::error::{Error, Result};
use crate::middleware::{DispatchChain, DispatchMiddleware};
use crate::shards::ShardCounts;
use crate::store::{self, keys::Keys};
use crate::transport::connection::{DedicatedOpener, Opener, Shared};
use crate::transport::endpoint::{self, TlsFiles};
use crate::transport::replication::ReplicaWait;
use redis::AsyncConnectionConfig;
use redis::aio::ConnectionManagerConfig;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Builds a [`Client`]: another namespace than `gator`, or TLS files for a `rediss://` URL.
#[derive(Clone)]
pub struct ClientBuilder {
    url: String,
    namespace: String,
    tls: TlsFiles,
    cluster: bool,
    wait: Option<ReplicaWait>,
    middleware: DispatchChain,
    max_payload: Option<usize>,
    compress_over: Option<usize>,
    aside_over: Option<usize>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("url", &endpoint::redact(&self.url))
            .field("namespace", &self.namespace)
            .field("tls", &self.tls)
            .field("cluster", &self.cluster)
            .field("wait", &self.wait)
            .field("middleware", &self.middleware)
            .field("max_payload", &self.max_payload)
            .field("compress_over", &self.compress_over)
            .field("aside_over", &self.aside_over)
            .finish()
    }
}

impl ClientBuilder {
    /// Refuses to store a job whose payload (its JSON document, arguments and all) is larger
    /// than `bytes`, with [`Error::PayloadTooLarge`]; at least 1 KiB. Unset,
    /// `GATOR_MAX_PAYLOAD` decides, else 512 KiB ([`crate::payload::limit`]). A worker sends a
    /// payload over its client's limit that arrived by another path to the dead set.
    pub fn max_payload(mut self, bytes: usize) -> ClientBuilder {
        self.max_payload = Some(bytes);
        self
    }

    /// Stores a job whose payload is over `bytes` with its arguments zstd-compressed
    /// ([`crate::payload::packed`]); workers, `Admin` and the dashboard see them decoded.
    /// Unset, `GATOR_COMPRESS_OVER` decides, else 16 KiB. `usize::MAX` turns it off.
    pub fn compress_over(mut self, bytes: usize) -> ClientBuilder {
        self.compress_over = Some(bytes);
        self
    }

    /// Stores the arguments of a job whose payload is still over `bytes` once packed (or that
    /// does not shrink) beside it, in a key of its own of the same slot
    /// ([`crate::payload::aside`]); workers and readers fetch them with the job. Unset,
    /// `GATOR_ASIDE_OVER` decides, else 256 KiB; at least 1 KiB. `usize::MAX` turns it off.
    pub fn aside_over(mut self, bytes: usize) -> ClientBuilder {
        self.aside_over = Some(bytes);
        self
    }

    /// Adds client middleware: it sees each job this client is about to store, and may change
    /// it or refuse it (see [`crate::middleware`]). Middleware runs in the order it was added.
    pub fn middleware(self, middleware: impl DispatchMiddleware) -> ClientBuilder {
        self.shared_middleware(Arc::new(middleware))
    }

    /// [`ClientBuilder::middleware`] for middleware shared with other clients.
    pub fn shared_middleware(mut self, middleware: Arc<dyn DispatchMiddleware>) -> ClientBuilder {
        self.middleware.push(middleware);
        self
    }

    /// After each enqueue (dispatch, schedule, chain), waits until `replicas` replicas have it,
    /// for at most `timeout`, and fails the dispatch with [`Error::NotReplicated`] if they do
    /// not: an `Ok` then means the job survives a failover to a replica (see
    /// [`crate::replication`]). Costs each dispatch a round trip to the replicas. `0` turns it
    /// off. Unset, `GATOR_WAIT_REPLICAS` (and `GATOR_WAIT_TIMEOUT`) decide.
    pub fn wait_for_replicas(mut self, replicas: u32, timeout: Duration) -> ClientBuilder {
        self.wait = Some(ReplicaWait { replicas, timeout });
        self
    }

    /// Puts every key under `namespace` instead of `gator`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> ClientBuilder {
        self.namespace = namespace.into();
        self
    }

    /// Verifies a `rediss://` server against the CA(s) in the PEM file at `path` instead of
    /// the system's roots. Unset, `GATOR_REDIS_CA_CERT` is used if set.
    pub fn ca_cert(mut self, path: impl Into<PathBuf>) -> ClientBuilder {
        self.tls.ca_cert = Some(path.into());
        self
    }

    /// Presents the PEM client certificate `cert` with its key `key` to a `rediss://` server
    /// that asks for one (mutual TLS). Unset, `GATOR_REDIS_CLIENT_CERT` and
    /// `GATOR_REDIS_CLIENT_KEY` are used if set.
    pub fn client_cert(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> ClientBuilder {
        self.tls.client_cert = Some(cert.into());
        self.tls.client_key = Some(key.into());
        self
    }

    /// Treats a single URL as the seed of a Redis Cluster (several comma-separated URLs are a
    /// cluster without it). Unset, `GATOR_REDIS_CLUSTER=1` turns it on.
    pub fn cluster(mut self, cluster: bool) -> ClientBuilder {
        self.cluster = cluster;
        self
    }

    /// Sets every TLS file at once (see [`TlsFiles`]); those left unset come from the
    /// environment.
    pub fn tls(mut self, tls: TlsFiles) -> ClientBuilder {
        self.tls = tls;
        self
    }

    /// Connects. Fails if Redis cannot be reached within a few seconds, or refuses the
    /// connection (a certificate that does not verify, a wrong password).
    pub async fn connect(self) -> Result<Client> {
        let keys = Keys::new(&self.namespace)?;
        let max_payload = match self.max_payload {
            Some(bytes) => bytes.max(crate::payload::limit::MIN_MAX_PAYLOAD),
            None => crate::payload::limit::from_env()?,
        };
        crate::payload::packed::raise_decode_limit(max_payload);
        let compress_over = match self.compress_over {
            Some(bytes) => bytes,
            None => crate::payload::packed::from_env()?,
        };
        let aside_over = crate::payload::aside::threshold(self.aside_over)?;
        let wait = match self.wait {
            Some(wait) => Some(wait).filter(|w| w.replicas > 0),
            None => ReplicaWait::from_env()?,
        };
        let shown_url = endpoint::redact(&self.url);
        let cluster = self.cluster || endpoint::cluster_from_env();
        let (target, info) = endpoint::open_target(&self.url, cluster, &self.tls.or_from_env())?;
        let (shared, blocking) = openers(target);
        let shared = Shared::connect(shared)
            .await
            .map_err(|source| Error::Connect {
                url: shown_url.clone(),
                source,
            })?;
        Ok(Client {
            inner: Arc::new(Inner {
                info,
                shown_url,
                keys,
                shared,
                blocking,
                registered: Mutex::new(HashMap::new()),
                shards: ShardCounts::default(),
                wait,
                middleware: self.middleware,
                max_payload,
                compress_over,
                aside_over,
            }),
        })
    }
}

/// The openers of the shared connection and of the dedicated ones, for `target`, each with its
/// timeouts.
fn openers(target: endpoint::Target) -> (Opener, DedicatedOpener) {
    // Few, short reconnect attempts: a caller learns within about two seconds that Redis is
    // away, instead of waiting out the crate's default of six growing retries.
    let single = || {
        ConnectionManagerConfig::new()
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
    };
    let direct = || {
        AsyncConnectionConfig::new()
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
    };
    let blocking = || {
        AsyncConnectionConfig::new()
            .set_response_timeout(Some(DEDICATED_RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
    };
    match target {
        endpoint::Target::Single(redis) => (
            Opener::Single(redis.clone(), single()),
            DedicatedOpener::Single(redis, blocking()),
        ),
        endpoint::Target::Sentinel(sentinels) => (
            Opener::Sentinel(sentinels.clone(), direct()),
            DedicatedOpener::Sentinel(sentinels, blocking()),
        ),
        #[cfg(feature = "cluster")]
        endpoint::Target::Cluster(redis) => {
            let config = redis::cluster::ClusterConfig::new()
                .set_response_timeout(RESPONSE_TIMEOUT)
                .set_connection_timeout(CONNECT_TIMEOUT);
            let blocking = redis::cluster::ClusterConfig::new()
                .set_response_timeout(DEDICATED_RESPONSE_TIMEOUT)
                .set_connection_timeout(CONNECT_TIMEOUT);
            (
                Opener::Cluster(redis.clone(), config),
                DedicatedOpener::Cluster(redis, blocking),
            )
        }
    }
}

impl Client {
    /// A builder for a client of the Redis at `url`: `redis://host:port/db` (`rediss://` for
    /// TLS); a Redis Cluster as comma-separated node URLs (with the `cluster` feature); or a
    /// master found by its sentinels, `redis+sentinel://host:26379,host2:26379/SERVICE[/db]`
    /// (see [`crate::sentinel`]).
    pub fn builder(url: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            url: url.into(),
            namespace: store::keys::DEFAULT_NAMESPACE.to_owned(),
            tls: TlsFiles::default(),
            cluster: false,
            wait: None,
            middleware: default_chain(),
            max_payload: None,
            compress_over: None,
            aside_over: None,
        }
    }

    /// Connects to the Redis at `url` with the default namespace (and, for a `rediss://` URL,
    /// the TLS files named by `GATOR_REDIS_CA_CERT`, `GATOR_REDIS_CLIENT_CERT` and
    /// `GATOR_REDIS_CLIENT_KEY`, if set).
    pub async fn connect(url: &str) -> Result<Client> {
        Client::builder(url).connect().await
    }

    /// Connects as the environment says: `GATOR_REDIS_URL` (default
    /// `redis://127.0.0.1:6379`), `GATOR_NAMESPACE` (default `gator`), and the TLS files
    /// above.
    pub async fn from_env() -> Result<Client> {
        let url =
            std::env::var(endpoint::REDIS_URL_ENV).unwrap_or_else(|_| DEFAULT_REDIS_URL.to_owned());
        let mut builder = Client::builder(url);
        if let Ok(ns) = std::env::var("GATOR_NAMESPACE") {
            builder = builder.namespace(ns);
        }
        builder.connect().await
    }
}

/// The middleware every client starts with: with the `otel` feature, trace propagation;
/// none without it.
pub(crate) fn default_chain() -> DispatchChain {
    #[allow(unused_mut)]
    let mut chain = DispatchChain::default();
    #[cfg(feature = "otel")]
    chain.push(Arc::new(crate::otel::TracePropagation));
    chain
}
