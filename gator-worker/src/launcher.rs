//! The launcher: starts the pieces of a worker and stops them in order.
//!
//! Start, in order:
//! 1. connect (retrying while Redis is unreachable), and record the served queues as known;
//! 2. take a lease on each served queue and beat once (queues found later are leased before
//!    their first fetch);
//! 3. recover the in-flight jobs of dead processes (and, with `--worker-id`, of this worker's
//!    earlier processes) before fetching anything;
//! 4. start the heartbeat, the recovery loop, the processors, the poller and the cron loop
//!    (which publishes the periodic jobs declared in code).
//!
//! Shutdown, in order:
//! 1. the stop token is cancelled (SIGINT/SIGTERM, or the embedding program);
//! 2. processors stop fetching (a job fetched at that moment stays in flight); the poller, the
//!    cron loop and the recovery loop stop;
//! 3. running jobs get up to `shutdown_timeout` to finish and settle; at that deadline their
//!    contexts are cancelled (`ctx.cancelled()` resolves) and they get one more second;
//! 4. once no fetch can still land a job, every job left in this process's in-flight lists
//!    (still running, or fetched as shutdown began) goes back to the head of its queue, and
//!    the lease on each emptied queue is given up in the same step; it will run again (at
//!    least once). What could not be put back stays leased: the heartbeat stops, the lease
//!    expires, and the fleet recovers it;
//! 5. the heartbeat stops; the process deregisters only if everything was put back, and
//!    `run_until` returns.

use crate::builder::WorkerBuilder;
use crate::clock::RedisClock;
use crate::config::WorkerConfig;
use crate::fetcher::{FETCH_TIMEOUT, Fetcher};
use crate::heartbeat::{Heartbeat, process_id};
use crate::leases::Leases;
use crate::poller::Poller;
use crate::processor::Processor;
use crate::queues::QueueOrder;
use crate::recovery::Recovery;
use gator_core::client::DEDICATED_RESPONSE_TIMEOUT;
use gator_core::store;
use gator_core::{Client, Registry, StateMap};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info, warn};

/// A worker: a fixed pool of processors and a poller, for one config. Made by
/// [`Worker::builder`]; nothing runs until [`Worker::run`] or [`Worker::run_until`].
#[derive(Debug)]
pub struct Worker {
    config: WorkerConfig,
    client: Option<Client>,
    registry: Arc<Registry>,
    states: StateMap,
    install_default_client: bool,
    middleware: crate::builder::Middleware,
}

impl Worker {
    /// A builder with the command line's defaults: `.redis_url(..)`, `.queues(..)`,
    /// `.state(..)`, then `.build()`.
    pub fn builder() -> WorkerBuilder {
        WorkerBuilder::new()
    }

    pub(crate) fn from_parts(
        config: WorkerConfig,
        client: Option<Client>,
        registry: Arc<Registry>,
        states: StateMap,
        install_default_client: bool,
        middleware: crate::builder::Middleware,
    ) -> Worker {
        Worker {
            config,
            client,
            registry,
            states,
            install_default_client,
            middleware,
        }
    }

    /// Runs until SIGINT or SIGTERM (Ctrl-C where there are no Unix signals), then shuts
    /// down gracefully. It listens for the signals only while it runs; inside an app with its
    /// own shutdown, use [`Worker::run_until`].
    pub async fn run(self) -> gator_core::Result<()> {
        let stop = CancellationToken::new();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            info!("signal received: shutting down");
            on_signal.cancel();
        });
        self.run_until(stop).await
    }

    /// Runs until `stop` is cancelled, then shuts down gracefully (see the module docs).
    /// Retries while Redis is unreachable; fails if it can never work (an invalid URL or TLS
    /// file, a refused password).
    pub async fn run_until(self, stop: CancellationToken) -> gator_core::Result<()> {
        let Worker {
            config,
            client,
            registry,
            states,
            install_default_client,
            middleware,
        } = self;
        let client = match client {
            Some(client) => client,
            None => match connect(&config, &middleware.dispatch, &stop).await? {
                Some(client) => client,
                None => return Ok(()), // stopped before Redis was reachable: nothing was fetched
            },
        };
        if install_default_client {
            gator_core::set_default_client(client.clone());
        }
        let order = Arc::new(QueueOrder::new(config.queues.clone()));
        if let Err(e) = order.refresh(&client).await {
            warn!(error = %e, "could not read the known queues yet");
        }
        // The queues it serves are known from now on, even if no client has dispatched to them.
        if let Err(e) =
            store::queue::register(&mut client.connection(), client.keys(), &order.all()).await
        {
            warn!(error = %e, "could not record the served queues as known");
        }
        info!(
            redis_url = %client.redacted_url(), queues = %config.queues, concurrency = config.concurrency, namespace = %config.namespace,
            jobs = ?registry.names(), "worker started"
        );

        let id = process_id(config.worker_id.as_deref());
        let clock = Arc::new(RedisClock::default());
        let leases = Arc::new(Leases::new(
            client.clone(),
            id.clone(),
            config.lease,
            clock.clone(),
        ));
        let observer = Arc::new(crate::observer::Observer::new(config.metrics));
        let fetcher = Arc::new(
            Fetcher::new(
                client.clone(),
                order.clone(),
                leases.clone(),
                id.clone(),
                config.concurrency,
                config.retention,
            )
            .with_observer(observer.clone()),
        );
        let heartbeat = Arc::new(Heartbeat::new(
            client.clone(),
            &config,
            id,
            leases.clone(),
            clock.clone(),
        ));
        for queue in order.all() {
            if let Err(e) = leases.acquire(&queue).await {
                warn!(queue = %queue, error = %e, "could not take a lease on the queue yet; the first fetch takes it");
            }
        }
        if let Err(e) = heartbeat.tick().await {
            warn!(error = %e, "first heartbeat failed");
        }
        info!(process = %heartbeat.id, lease_ms = config.lease.as_millis() as u64, "registered");
        // Recover before fetching: a restart under the same --worker-id puts its predecessor's
        // jobs back first, and any dead process's jobs go back at the head of their queues.
        let recovery = Arc::new(Recovery::new(
            client.clone(),
            fetcher.clone(),
            leases.clone(),
            config.worker_id.clone(),
            config.recovery_interval,
        ));
        let first_pass = recovery.tick(true).await;

        let tracker = TaskTracker::new();
        // The heartbeat outlives the processors: their jobs stay leased until put back.
        let heartbeat_stop = CancellationToken::new();
        let heartbeat_task = tokio::spawn(heartbeat.clone().run(heartbeat_stop.clone()));
        // Read until the heartbeat stops: a job cancelled while shutdown waits for it is told.
        let cancels = crate::cancellation::Cancels::new(client.clone(), leases.clone());
        let cancels_task = tokio::spawn(cancels.clone().run(heartbeat_stop.clone()));
        // Stops with the heartbeat, after the processors: the last outcomes are counted too.
        let served = order.clone();
        let observer_task = tokio::spawn(observer.clone().run(
            client.clone(),
            clock.clone(),
            move || served.all(),
            heartbeat_stop.clone(),
        ));
        tracker.spawn(recovery.clone().run(stop.clone(), first_pass));
        let deadline = CancellationToken::new();
        let settler = Arc::new(crate::settle::Settler::new(
            client.clone(),
            fetcher.clone(),
            crate::settle::Kept {
                dead_cap: config.dead_cap,
                retention: config.retention,
            },
        ));
        for id in 0..config.concurrency {
            let processor = Processor {
                id,
                client: client.clone(),
                registry: registry.clone(),
                fetcher: fetcher.clone(),
                settler: settler.clone(),
                clock: clock.clone(),
                states: states.clone(),
                deadline: deadline.clone(),
                cancels: cancels.clone(),
                service: middleware.layers.service(),
                observer: observer.clone(),
            };
            tracker.spawn(processor.run(stop.clone()));
        }
        let poller = Poller {
            client: client.clone(),
            order: order.clone(),
            interval: config.poll_interval,
            fleet: heartbeat.fleet.clone(),
        };
        tracker.spawn(poller.run(stop.clone()));
        // The entries declared in code for the jobs this worker runs (checked by the builder).
        let declared = gator_core::cron::declared()
            .unwrap_or_default()
            .into_iter()
            .filter(|entry| registry.get(&entry.job).is_some())
            .collect();
        let cron = crate::cron::Cron {
            client: client.clone(),
            declared,
            refresh: config.poll_interval * crate::cron::REFRESH_POLLS,
        };
        tracker.spawn(cron.run(stop.clone()));
        tracker.close();

        stop.cancelled().await;
        info!(timeout = ?config.shutdown_timeout, "stopping: waiting for running jobs to finish");
        let mut finished = tokio::time::timeout(config.shutdown_timeout, tracker.wait())
            .await
            .is_ok();
        if !finished {
            // The deadline: running jobs' contexts are cancelled, and a job that stops when
            // told gets a moment to settle before what is left is put back.
            deadline.cancel();
            finished = tokio::time::timeout(CANCEL_GRACE, tracker.wait())
                .await
                .is_ok();
        }
        // The successes of jobs under flow control are written before anything is put back,
        // or those jobs would run again.
        settler
            .flush_admitted(tokio::time::Instant::now() + FLUSH_TIMEOUT)
            .await;
        let fetches_done = wait_for_fetches(&fetcher).await;
        let complete = recovery.put_back_own(fetches_done, finished).await;
        heartbeat_stop.cancel();
        let _ = heartbeat_task.await;
        let _ = cancels_task.await;
        let _ = observer_task.await;
        if complete {
            heartbeat.deregister().await;
        }
        Ok(())
    }
}

/// How long shutdown waits for the pending successes of jobs under flow control to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Waits until no fetch is under way, so none can land a job after the lists were emptied;
/// false if one still is at the deadline (a blocked fetch ends by then unless its connection
/// hangs, and that one times out soon after).
async fn wait_for_fetches(fetcher: &Fetcher) -> bool {
    let deadline = tokio::time::Instant::now()
        + FETCH_TIMEOUT
        + DEDICATED_RESPONSE_TIMEOUT
        + Duration::from_secs(1);
    while fetcher.fetches_in_flight() > 0 {
        if tokio::time::Instant::now() >= deadline {
            warn!(
                "a fetch is still under way: this process's leases are left to expire, and the fleet recovers whatever it lands"
            );
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// How long jobs whose contexts were cancelled at the shutdown deadline get to settle.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

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

/// SIGINT or SIGTERM (Ctrl-C where there are no Unix signals).
#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => {
            error!("cannot listen for SIGINT/SIGTERM; only Ctrl-C will stop the worker");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Ctrl-C, where there are no Unix signals.
#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
