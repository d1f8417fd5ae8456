//! The launcher: starts the pieces of a worker and stops them in order.
//!
//! Shutdown, in order:
//! 1. the stop token is cancelled (SIGINT/SIGTERM, or the embedding program);
//! 2. processors stop fetching (a job fetched at that moment stays in flight); the poller and
//!    the recovery loop stop;
//! 3. running jobs get up to `shutdown_timeout` to finish and settle;
//! 4. once no fetch is in flight, every job left in this process's in-flight lists (still
//!    running, or fetched as shutdown began) goes back to the head of its queue; it will run
//!    again (at least once);
//! 5. the process deregisters and `run_until` returns.

use crate::config::WorkerConfig;
use crate::fetcher::Fetcher;
use crate::fetcher::{FETCH_TIMEOUT, QueueOrder};
use crate::heartbeat::Heartbeat;
use crate::poller::Poller;
use crate::processor::Processor;
use crate::recovery::Recovery;
use gator_core::store::{self, inflight};
use gator_core::{Client, Registry};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info, warn};

/// A worker: a fixed pool of processors and a poller, for one config.
#[derive(Debug, Clone)]
pub struct Worker {
    config: WorkerConfig,
}

impl Worker {
    /// A worker for `config`; nothing runs until [`Worker::run`] or [`Worker::run_until`].
    pub fn new(config: WorkerConfig) -> Worker {
        Worker { config }
    }

    /// Runs until SIGINT or SIGTERM, then shuts down gracefully.
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
    /// Fails only if the jobs linked into this binary are inconsistent (a duplicate wire name).
    pub async fn run_until(self, stop: CancellationToken) -> gator_core::Result<()> {
        let config = self.config;
        let registry = Arc::new(Registry::from_inventory()?);
        let Some(client) = connect(&config, &stop).await else {
            return Ok(()); // stopped before Redis was ever reachable: nothing was fetched
        };
        gator_core::set_default_client(client.clone());
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
            queues = %config.queues, concurrency = config.concurrency, namespace = %config.namespace,
            jobs = ?registry.names(), "worker started"
        );

        let tracker = TaskTracker::new();
        let heartbeat = Heartbeat::new(client.clone(), &config);
        if let Err(e) = heartbeat.tick().await {
            warn!(error = %e, "first heartbeat failed");
        }
        info!(process = %heartbeat.id, "registered");
        let fetcher = Arc::new(Fetcher::new(
            client.clone(),
            order.clone(),
            heartbeat.id.clone(),
            config.concurrency,
        ));
        // Recover before fetching: a restart after a crash puts its predecessor's jobs back first.
        let recovery = Recovery::new(client.clone(), fetcher.clone(), config.recovery_interval);
        if let Err(e) = recovery.tick().await {
            warn!(error = %e, "could not look for dead worker processes at start");
        }
        // The heartbeat outlives the processors: it deregisters only after they have settled.
        let heartbeat_stop = CancellationToken::new();
        let heartbeat_task = tokio::spawn(heartbeat.run(heartbeat_stop.clone()));
        tracker.spawn(recovery.run(stop.clone()));
        for id in 0..config.concurrency {
            let processor = Processor {
                id,
                client: client.clone(),
                registry: registry.clone(),
                fetcher: fetcher.clone(),
                dead_cap: config.dead_cap,
            };
            tracker.spawn(processor.run(stop.clone()));
        }
        let poller = Poller {
            client: client.clone(),
            order: order.clone(),
            interval: config.poll_interval,
        };
        tracker.spawn(poller.run(stop.clone()));
        tracker.close();

        stop.cancelled().await;
        info!(timeout = ?config.shutdown_timeout, "stopping: waiting for running jobs to finish");
        let finished = tokio::time::timeout(config.shutdown_timeout, tracker.wait())
            .await
            .is_ok();
        put_back_in_flight(&client, &fetcher, &order, finished).await;
        heartbeat_stop.cancel();
        let _ = heartbeat_task.await;
        Ok(())
    }
}

/// Connects, retrying with capped backoff and saying clearly why while Redis is unreachable.
async fn connect(config: &WorkerConfig, stop: &CancellationToken) -> Option<Client> {
    let mut delay = Duration::from_millis(500);
    loop {
        let connecting = Client::builder(config.redis_url.as_str())
            .namespace(config.namespace.as_str())
            // One dedicated connection per processor, and a spare.
            .max_blocking_connections(config.concurrency + 1)
            .connect();
        let attempt = tokio::select! {
            attempt = connecting => attempt,
            _ = stop.cancelled() => return None,
        };
        match attempt {
            Ok(client) => return Some(client),
            Err(e) => {
                error!(redis_url = %config.redis_url, error = %e, retry_in_s = delay.as_secs_f64(), "cannot reach redis; retrying");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => delay = (delay * 2).min(Duration::from_secs(10)),
            _ = stop.cancelled() => return None,
        }
    }
}

/// Puts every job still in this process's in-flight lists back at the head of its queue:
/// jobs still running after the shutdown timeout (they will run again: at least once), and any
/// fetched as shutdown began. A cleanly stopped process leaves no in-flight job behind.
async fn put_back_in_flight(
    client: &Client,
    fetcher: &Fetcher,
    order: &QueueOrder,
    finished: bool,
) {
    // A blocked fetch could still move a job in after the lists were emptied; let those end.
    let deadline = tokio::time::Instant::now() + FETCH_TIMEOUT + Duration::from_secs(3);
    while fetcher.fetches_in_flight() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut put_back = 0;
    for queue in order.all() {
        match inflight::recover(
            &mut client.connection(),
            client.keys(),
            &queue,
            fetcher.process(),
        )
        .await
        {
            Ok(n) => put_back += n,
            Err(e) => {
                error!(queue = %queue, error = %e, "could not put in-flight jobs back; another worker will recover them")
            }
        }
    }
    if finished && put_back == 0 {
        info!("worker stopped cleanly");
    } else {
        warn!(
            jobs = put_back,
            "put unfinished jobs back at the head of their queues"
        );
    }
}

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
