//! The client that dispatches jobs: one shared multiplexed connection for every short command,
//! and dedicated connections for blocking commands, all through redis-rs. Every one of them
//! has a response timeout and TCP keepalive, so a connection that went silent is noticed and
//! replaced.

mod raw;

use crate::chain::Chain;
use crate::connection::{Connection, Dedicated, DedicatedOpener, Opener, Shared};
use crate::endpoint::{self, TlsFiles};
use crate::error::{Error, Result};
use crate::job::{DueTime, Encoded, Job, PendingJob, encode};
use crate::middleware::{DispatchChain, DispatchMiddleware};
use crate::payload::Payload;
use crate::replication::ReplicaWait;
use crate::shards::ShardCounts;
use crate::store::schedule::When;
use crate::store::{self, keys::Keys};
use crate::unique::Dispatched;
use redis::aio::ConnectionManagerConfig;
use redis::{AsyncConnectionConfig, ConnectionInfo};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

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
        let wait = match self.wait {
            Some(wait) => Some(wait).filter(|w| w.replicas > 0),
            None => ReplicaWait::from_env()?,
        };
        let shown_url = endpoint::redact(&self.url);
        let cluster = self.cluster || endpoint::cluster_from_env();
        let (target, info) = endpoint::open_target(&self.url, cluster, &self.tls.or_from_env())?;
        // Few, short reconnect attempts: a caller learns within about two seconds that Redis
        // is away, instead of waiting out the crate's default of six growing retries.
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
        let (shared, blocking) = match target {
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
        };
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
            }),
        })
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
            middleware: crate::middleware::default_chain(),
            max_payload: None,
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
        let (secs, micros): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut self.connection())
            .await?;
        Ok(secs * 1000 + micros / 1000)
    }

    /// Enqueues `job` now; returns its jid.
    pub async fn dispatch<J: Job>(&self, job: PendingJob<J>) -> Result<String> {
        if let Some(mode) = crate::testing::active() {
            return crate::testing::dispatch(mode, encode(job), None).await;
        }
        let payload = self.placed(encode(job)?).await?;
        Ok(self.dispatch_placed(payload).await?.into_jid())
    }

    /// [`Client::dispatch`] of a placed payload: a unique job goes with its lock
    /// ([`crate::unique`]); any other is new.
    pub(crate) async fn dispatch_placed(&self, payload: Payload) -> Result<Dispatched> {
        if let Some(start) = self.window_start(&payload, None).await? {
            return self.schedule_placed(payload, When::At(start), start).await;
        }
        if payload.unique.is_some() {
            return self.store_unique(payload, None).await;
        }
        self.enqueue(std::slice::from_ref(&payload)).await?;
        Ok(Dispatched::New(payload.jid))
    }

    /// For a job with time windows ([`PendingJob::windows`]): when it may start, on Redis's
    /// clock, if it is due at `due` (ms; now if `None`): `due` itself if that lies inside a
    /// window, else the next opening. `None` for a job without windows, or one due now inside
    /// a window. Costs a `TIME` call, for jobs with windows only.
    pub(crate) async fn window_start(
        &self,
        payload: &Payload,
        due: Option<u64>,
    ) -> Result<Option<u64>> {
        let Some(windows) = payload
            .flow
            .as_ref()
            .map(crate::flow::FlowOptions::parsed_windows)
            .transpose()?
            .flatten()
        else {
            return Ok(None);
        };
        let now = self.redis_time().await?;
        let due = due.unwrap_or(now).max(now);
        let start = i64::try_from(due)
            .ok()
            .and_then(|due| windows.next_start(due))
            .and_then(|start| u64::try_from(start).ok())
            .unwrap_or(due);
        Ok((start > now).then_some(start))
    }

    /// `job`'s payload, on the shard of its queue it belongs to (see [`crate::shards`]).
    pub(crate) async fn placed(&self, job: Encoded) -> Result<Payload> {
        let mut placed = self.place(vec![job]).await?;
        Ok(placed.pop().expect("one payload per job"))
    }

    /// [`Client::placed`] for many jobs, each first through the client middleware: a refusal
    /// stores none of them.
    pub(crate) async fn place(&self, mut jobs: Vec<Encoded>) -> Result<Vec<Payload>> {
        for job in &mut jobs {
            if !self.inner.middleware.is_empty() {
                self.inner.middleware.apply(&mut job.payload)?;
            }
            crate::payload::limit::check(&job.payload, self.inner.max_payload)?;
        }
        self.inner
            .shards
            .place(&mut self.connection(), self.keys(), jobs)
            .await
    }

    /// Every sharded queue and its number of shards.
    pub(crate) async fn shard_counts(&self) -> Result<HashMap<String, u32>> {
        store::shards::all(&mut self.connection(), self.keys()).await
    }

    /// Enqueues many jobs of one type in one round trip; returns their jids in order. Unique
    /// jobs ([`crate::unique`]) go one by one with their locks; a duplicate's jid is its
    /// holder's.
    pub async fn dispatch_many<J: Job>(
        &self,
        jobs: impl IntoIterator<Item = PendingJob<J>>,
    ) -> Result<Vec<String>> {
        if let Some(mode) = crate::testing::active() {
            let mut jids = Vec::new();
            for job in jobs {
                jids.push(crate::testing::dispatch(mode.clone(), encode(job), None).await?);
            }
            return Ok(jids);
        }
        let jobs = jobs.into_iter().map(encode).collect::<Result<Vec<_>>>()?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let payloads = self.place(jobs).await?;
        let mut jids = Vec::with_capacity(payloads.len());
        // Jobs with time windows that may not start now are scheduled at their next opening,
        // and unique jobs go one by one with their locks (a duplicate's jid is the holder's);
        // the rest go in one round trip.
        let mut now = Vec::with_capacity(payloads.len());
        for payload in payloads {
            match self.window_start(&payload, None).await? {
                Some(start) => {
                    jids.push(self.schedule(payload, When::At(start), start).await?);
                }
                None if payload.unique.is_some() => {
                    jids.push(self.store_unique(payload, None).await?.into_jid());
                }
                None => {
                    jids.push(payload.jid.clone());
                    now.push(payload);
                }
            }
        }
        if !now.is_empty() {
            self.enqueue(&now).await?;
        }
        Ok(jids)
    }

    /// Schedules `job` to run at `time` (a `SystemTime`, or Unix seconds as `f64`); at once if
    /// `time` has passed on Redis's clock. Refuses a non-finite time or one more than
    /// [`SCHEDULE_HORIZON`] ahead.
    pub async fn dispatch_at<J: Job>(
        &self,
        job: PendingJob<J>,
        time: impl Into<DueTime>,
    ) -> Result<String> {
        let due = time.into().to_ms()?;
        if let Some(mode) = crate::testing::active() {
            let at = SystemTime::UNIX_EPOCH + Duration::from_millis(due);
            return crate::testing::dispatch(mode, encode(job), Some(at)).await;
        }
        let payload = self.placed(encode(job)?).await?;
        // A time outside the job's windows moves to the next opening after it.
        let due = self.window_start(&payload, Some(due)).await?.unwrap_or(due);
        self.schedule(payload, When::At(due), due).await
    }

    /// Schedules `job` to run after `delay`, counted on Redis's clock (so a producer whose own
    /// clock is off still gets the delay it asked for); returns its jid.
    pub async fn dispatch_in<J: Job>(&self, job: PendingJob<J>, delay: Duration) -> Result<String> {
        let estimate = crate::payload::to_ms(time_after(delay)?);
        if let Some(mode) = crate::testing::active() {
            let at = SystemTime::UNIX_EPOCH + Duration::from_millis(estimate);
            return crate::testing::dispatch(mode, encode(job), Some(at)).await;
        }
        let payload = self.placed(encode(job)?).await?;
        if payload.flow.as_ref().is_some_and(|f| !f.windows.is_empty()) {
            // Counted from Redis's clock, then moved to the next opening if outside a window.
            let due = self.redis_time().await? + crate::store::lease::millis(delay);
            let due = self.window_start(&payload, Some(due)).await?.unwrap_or(due);
            return self.schedule(payload, When::At(due), due).await;
        }
        self.schedule(payload, When::In(delay), estimate).await
    }

    /// Stores `payload` to run `when` (`enqueued_at_ms` is what its payload records as the
    /// time it becomes due); returns its jid.
    /// Schedules an encoded `payload` at `due` (ms, Redis time); returns its jid.
    pub(crate) async fn dispatch_at_ms(&self, payload: Payload, due: u64) -> Result<String> {
        self.schedule(payload, When::At(due), due).await
    }

    async fn schedule(&self, payload: Payload, when: When, enqueued_at_ms: u64) -> Result<String> {
        Ok(self
            .schedule_placed(payload, when, enqueued_at_ms)
            .await?
            .into_jid())
    }

    /// [`Client::schedule`], saying whether a unique job found a duplicate.
    pub(crate) async fn schedule_placed(
        &self,
        mut payload: Payload,
        when: When,
        enqueued_at_ms: u64,
    ) -> Result<Dispatched> {
        // `enqueued_at` is when the job becomes due on its queue; the promotion script moves
        // the payload without rewriting it.
        payload.enqueued_at = enqueued_at_ms.max(payload.enqueued_at);
        if payload.unique.is_some() {
            return self.store_unique(payload, Some(when)).await;
        }
        self.register_if_due(std::slice::from_ref(&payload)).await?;
        let mut conn = self.connection();
        store::schedule::schedule(&mut conn, self.keys(), &payload, when, None)
            .await
            .map_err(|e| e.of_queue(&payload.queue))?;
        self.confirm_replicated(&mut conn, vec![payload.queue.as_str()])
            .await?;
        Ok(Dispatched::New(payload.jid))
    }

    /// Stores `chain`: its first step on its queue now (or scheduled at `at`, on Redis's
    /// clock), the rest waiting in the chain's list. Returns the chain id.
    pub async fn dispatch_chain(&self, chain: Chain, at: Option<SystemTime>) -> Result<String> {
        if let Some(mode) = crate::testing::active() {
            return crate::testing::dispatch_chain(mode, chain, at).await;
        }
        let when = match at {
            Some(time) => When::At(DueTime::from(time).to_ms()?),
            None => When::In(Duration::ZERO),
        };
        self.store_chain(chain, when).await
    }

    /// Stores `chain` with its first step due after `delay`, counted on Redis's clock. Returns
    /// the chain id.
    pub async fn dispatch_chain_in(&self, chain: Chain, delay: Duration) -> Result<String> {
        let at = time_after(delay)?; // refuses a delay past the end of time, as dispatch_in does
        if let Some(mode) = crate::testing::active() {
            return crate::testing::dispatch_chain(mode, chain, Some(at)).await;
        }
        self.store_chain(chain, When::In(delay)).await
    }

    async fn store_chain(&self, chain: Chain, when: When) -> Result<String> {
        let steps = self.place(chain.into_steps()?).await?;
        let (id, mut steps) = crate::chain::link(steps)?;
        match when {
            When::At(due) => steps[0].enqueued_at = due.max(steps[0].enqueued_at),
            When::In(delay) => steps[0].enqueued_at += crate::store::lease::millis(delay),
        }
        self.register_controlled(&steps).await?;
        let mut conn = self.connection();
        store::chain::create(&mut conn, self.keys(), &steps, when).await?;
        self.confirm_replicated(&mut conn, vec![steps[0].queue.as_str()])
            .await?;
        Ok(id)
    }

    /// Records the queues of `payloads` in the known-queues set if this client has not done so
    /// in the last [`REGISTER_EVERY`], as a command of its own (a global key).
    pub(crate) async fn register_if_due(&self, payloads: &[Payload]) -> Result<()> {
        self.register_controlled(payloads).await?;
        if !self.due_for_registering(payloads.iter().map(|p| p.queue.as_str())) {
            return Ok(());
        }
        let queues: Vec<String> = payloads.iter().map(|p| p.queue.clone()).collect();
        store::queue::register(&mut self.connection(), self.keys(), &queues).await?;
        self.note_registered(payloads);
        Ok(())
    }

    /// Records the queues of `payloads` that carry flow options in the global set of controlled
    /// queues, before a script makes them controlled (see [`store::flow::register`]).
    pub(crate) async fn register_controlled(&self, payloads: &[Payload]) -> Result<()> {
        let mut queues: Vec<&str> = payloads
            .iter()
            .filter(|p| p.flow.as_ref().is_some_and(|f| !f.is_empty()))
            .map(|p| p.queue.as_str())
            .collect();
        if queues.is_empty() {
            return Ok(());
        }
        queues.sort_unstable();
        queues.dedup();
        store::flow::register(&mut self.connection(), self.keys(), &queues).await
    }

    /// Pushes payloads to their queues, recording the queues in the known-queues set when this
    /// client has not done so in the last [`REGISTER_EVERY`].
    async fn enqueue(&self, payloads: &[Payload]) -> Result<()> {
        let register = self.due_for_registering(payloads.iter().map(|p| p.queue.as_str()));
        let mut conn = self.connection();
        store::queue::enqueue(&mut conn, self.keys(), payloads, register)
            .await
            .map_err(|e| match payloads.first() {
                Some(first) => e.of_queue(&first.queue),
                None => e,
            })?;
        if register {
            self.note_registered(payloads);
        }
        let queues = payloads.iter().map(|p| p.queue.as_str()).collect();
        self.confirm_replicated(&mut conn, queues).await
    }

    /// With [`ClientBuilder::wait_for_replicas`]: waits until the replicas have what `conn`
    /// just wrote to the lists of `queues`.
    pub(crate) async fn confirm_replicated(
        &self,
        conn: &mut Connection,
        queues: Vec<&str>,
    ) -> Result<()> {
        let Some(wait) = &self.inner.wait else {
            return Ok(());
        };
        let mut keys = Vec::with_capacity(queues.len());
        for queue in queues {
            keys.push(self.keys().queue(queue));
        }
        wait.confirm(conn, keys).await
    }

    pub(crate) fn note_registered(&self, payloads: &[Payload]) {
        let now = Instant::now();
        let mut registered = self
            .inner
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for p in payloads {
            registered.insert(p.queue.clone(), now);
        }
    }

    pub(crate) fn due_for_registering<'a>(
        &self,
        mut queues: impl Iterator<Item = &'a str>,
    ) -> bool {
        let registered = self
            .inner
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        queues.any(|q| {
            registered
                .get(q)
                .is_none_or(|at| at.elapsed() >= REGISTER_EVERY)
        })
    }

    /// The known-queues set, sorted ([`crate::Admin::known_queues`]).
    pub(crate) async fn known_queues(&self) -> Result<Vec<String>> {
        store::queue::known(&mut self.connection(), self.keys()).await
    }
}

pub use crate::horizon::SCHEDULE_HORIZON;
pub(crate) use crate::horizon::time_after;

static DEFAULT_CLIENT: RwLock<Option<Client>> = RwLock::new(None);
static DEFAULT_INIT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The process-wide client used by `Job::dispatch`: the one set with [`set_default_client`],
/// or else one connected from the environment on first use (see [`Client::from_env`]).
pub async fn default_client() -> Result<Client> {
    if let Some(client) = current_default() {
        return Ok(client);
    }
    // One connection attempt at a time, so a burst of first dispatches opens one client.
    let _guard = DEFAULT_INIT.lock().await;
    if let Some(client) = current_default() {
        return Ok(client);
    }
    let client = Client::from_env().await?;
    set_default_client(client.clone());
    Ok(client)
}

/// Makes `client` the process-wide default. The `gator-worker` binary does this (a worker built
/// in code only with `.install_default_client()`), so that jobs which dispatch other jobs use
/// the worker's Redis and namespace.
pub fn set_default_client(client: Client) {
    // A poisoned lock only means a panic while swapping an Arc; the value is still whole.
    *DEFAULT_CLIENT.write().unwrap_or_else(|e| e.into_inner()) = Some(client);
}

fn current_default() -> Option<Client> {
    DEFAULT_CLIENT
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}
