//! Start, steps 1 to 3 (see [`crate::launcher`]): connect and announce the served queues, lease
//! them and register, recover what dead processes left, and put the pieces together.

use super::Worker;
use crate::catalogue::Catalogue;
use crate::clock::RedisClock;
use crate::config::WorkerConfig;
use crate::fetcher::Fetcher;
use crate::heartbeat::{Heartbeat, process_id};
use crate::leases::Leases;
use crate::middleware::Middleware;
use crate::observer::Observer;
use crate::queues::QueueOrder;
use crate::recovery::{self, Recovery};
use crate::settle::{Kept, Settler};
use gator_core::{Client, Registry, StateMap};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// A worker connected, registered and recovered once: everything [`Started::run`] starts.
pub(super) struct Started {
    pub(super) config: WorkerConfig,
    pub(super) client: Client,
    pub(super) registry: Arc<Registry>,
    pub(super) states: StateMap,
    pub(super) middleware: Middleware,
    pub(super) order: Arc<QueueOrder>,
    pub(super) clock: Arc<RedisClock>,
    pub(super) leases: Arc<Leases>,
    pub(super) observer: Arc<Observer>,
    pub(super) fetcher: Arc<Fetcher>,
    pub(super) settler: Arc<Settler>,
    pub(super) heartbeat: Arc<Heartbeat>,
    pub(super) recovery: Arc<Recovery>,
    pub(super) catalogue: Arc<Catalogue>,
    /// What the recovery pass at start found, which times the loop's next pass.
    pub(super) first_pass: recovery::Pass,
}

impl Worker {
    /// Start, steps 1 to 3; `None` if `stop` came before Redis was reachable.
    pub(super) async fn start(
        self,
        stop: &CancellationToken,
    ) -> gator_core::Result<Option<Started>> {
        let Worker {
            config,
            client,
            registry,
            states,
            install_default_client,
            middleware,
        } = self;
        // 1. Connect, and announce the queues served.
        let client = match client {
            Some(client) => client,
            None => match connect(&config, &middleware.dispatch, stop).await? {
                Some(client) => client,
                None => return Ok(None),
            },
        };
        if install_default_client {
            gator_core::set_default_client(client.clone());
        }
        let order = serve(&client, &config, &registry).await;
        let started = assemble(config, client, registry, states, middleware, order);
        // 2. Lease the queues served, and register.
        started.register().await;
        // 3. Recover before fetching.
        Ok(Some(started.recover().await))
    }
}

/// Reads the queues to serve, records them as known (even if no client has dispatched to them
/// yet), and says the worker started.
async fn serve(client: &Client, config: &WorkerConfig, registry: &Registry) -> Arc<QueueOrder> {
    let order = Arc::new(QueueOrder::new(config.queues.clone()));
    if let Err(e) = order.refresh(client).await {
        warn!(error = %e, "could not read the known queues yet");
    }
    let registered = crate::door::upkeep(client)
        .register_queues(&order.all())
        .await;
    if let Err(e) = registered {
        warn!(error = %e, "could not record the served queues as known");
    }
    let server = server(client).await;
    info!(
        redis_url = %client.redacted_url(), %server, queues = %config.queues, concurrency = config.concurrency, namespace = %config.namespace,
        jobs = ?registry.names(), "worker started"
    );
    order
}

/// Which server answers (`redis 7.0.15`, `valkey 9.1.2`), for the start's log line; says so if
/// Gator's scripts cannot run on it.
async fn server(client: &Client) -> String {
    match crate::door::presence(client).identify().await {
        Ok(server) => {
            if let Err(e) = server.supported() {
                error!(reason = %e, "this server cannot run Gator's scripts: they declare Redis 7 flags, and every one would be refused");
            }
            server.to_string()
        }
        Err(e) => {
            warn!(error = %e, "could not tell which server answers");
            "unknown".to_owned()
        }
    }
}

/// The pieces of one worker process, wired together; nothing runs yet.
fn assemble(
    config: WorkerConfig,
    client: Client,
    registry: Arc<Registry>,
    states: StateMap,
    middleware: Middleware,
    order: Arc<QueueOrder>,
) -> Started {
    let id = process_id(config.worker_id.as_deref());
    let clock = Arc::new(RedisClock::default());
    let leases = Arc::new(Leases::new(
        client.clone(),
        id.clone(),
        config.lease,
        clock.clone(),
    ));
    let observer = Arc::new(Observer::new(config.metrics).with_scaling(config.scaling));
    let fetcher = Fetcher::new(
        client.clone(),
        order.clone(),
        leases.clone(),
        id.clone(),
        config.concurrency,
        config.retention,
    );
    let fetcher = Arc::new(fetcher.with_observer(observer.clone()));
    let kept = Kept {
        dead_cap: config.dead_cap,
        retention: config.retention,
    };
    let settler = Arc::new(Settler::new(client.clone(), fetcher.clone(), kept));
    let catalogue = catalogue_of(&client, &id, &order, &registry, &fetcher);
    let heartbeat = Heartbeat::new(client.clone(), &config, id, leases.clone(), clock.clone());
    let predecessors = crate::identity::predecessors(config.worker_id.as_deref());
    let recovery = Recovery::new(
        client.clone(),
        fetcher.clone(),
        leases.clone(),
        predecessors,
        config.recovery_interval,
    );
    Started {
        config,
        client,
        registry,
        states,
        middleware,
        order,
        clock,
        leases,
        observer,
        fetcher,
        settler,
        heartbeat: Arc::new(heartbeat),
        recovery: Arc::new(recovery),
        catalogue,
        first_pass: recovery::Pass::default(),
    }
}

/// This worker's part in the job catalogue.
fn catalogue_of(
    client: &Client,
    id: &str,
    order: &Arc<QueueOrder>,
    registry: &Registry,
    fetcher: &Fetcher,
) -> Arc<Catalogue> {
    let outage = fetcher.outage().clone();
    let catalogue = Catalogue::new(
        client.clone(),
        id.to_owned(),
        order.clone(),
        registry,
        outage,
    );
    Arc::new(catalogue)
}

impl Started {
    /// Step 2: a lease on each served queue, then one beat, which registers the process.
    async fn register(&self) {
        for queue in self.order.all() {
            if let Err(e) = self.leases.acquire(&queue).await {
                warn!(queue = %queue, error = %e, "could not take a lease on the queue yet; the first fetch takes it");
            }
        }
        if let Err(e) = self.heartbeat.tick().await {
            warn!(error = %e, "first heartbeat failed");
        }
        let lease_ms = self.config.lease.as_millis() as u64;
        info!(process = %self.heartbeat.id, lease_ms, "registered");
        self.catalogue.publish().await;
        self.catalogue.say_what_it_leaves(&self.registry).await;
    }

    /// Step 3, before fetching: a restart under the same --worker-id puts its predecessor's
    /// jobs back first, and any dead process's jobs go back at the head of their queues.
    async fn recover(mut self) -> Started {
        self.first_pass = self.recovery.tick(true).await;
        self
    }
}

/// Connects, retrying with capped backoff and saying clearly why while Redis is unreachable;
/// `None` if stopped first.
async fn connect(
    config: &WorkerConfig,
    dispatch: &[Arc<dyn gator_core::middleware::DispatchMiddleware>],
    stop: &CancellationToken,
) -> gator_core::Result<Option<Client>> {
    let mut delay = Duration::from_millis(500);
    loop {
        let mut builder = Client::builder(config.redis_url.as_str())
            .namespace(config.namespace.as_str())
            .tls(config.tls.clone())
            .cluster(config.cluster);
        if let Some(wait) = config.wait {
            builder = builder.wait_for_replicas(wait.replicas, wait.timeout);
        }
        if let Some(bytes) = config.max_payload {
            builder = builder.max_payload(bytes);
        }
        for middleware in dispatch {
            builder = builder.shared_middleware(middleware.clone());
        }
        let connecting = builder.connect();
        let attempt = tokio::select! {
            attempt = connecting => attempt,
            _ = stop.cancelled() => return Ok(None),
        };
        match attempt {
            Ok(client) => return Ok(Some(client)),
            Err(e) if !e.is_connection() => {
                // A bad URL or TLS file, a refused password: waiting will not fix it.
                error!(redis_url = %gator_core::endpoint::redact(&config.redis_url), error = %e, "cannot connect to redis");
                return Err(e);
            }
            Err(e) => {
                error!(redis_url = %gator_core::endpoint::redact(&config.redis_url), error = %e, retry_in_s = delay.as_secs_f64(), "cannot reach redis; retrying");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => delay = (delay * 2).min(Duration::from_secs(10)),
            _ = stop.cancelled() => return Ok(None),
        }
    }
}
