//! The launcher: starts the pieces of a worker, runs them, and stops them in order:
//! [`Worker::run_until`] reads start (`start.rs`) → run (`run.rs`) → stop (`stop.rs`).
//!
//! Start, in order:
//! 1. connect (retrying while Redis is unreachable), and record the served queues as known;
//! 2. take a lease on each served queue and beat once (queues found later are leased before
//!    their first fetch);
//! 3. recover the in-flight jobs of dead processes (and, with `--worker-id`, of this worker's
//!    earlier processes) before fetching anything;
//! 4. start the heartbeat, the recovery loop, the processors, the poller and the cron loop
//!    (which publishes the periodic jobs declared in code), and with `--outbox` the outbox
//!    relay ([`crate::outbox`]).
//!
//! Shutdown, in order:
//! 1. the stop token is cancelled (SIGINT/SIGTERM, or the embedding program);
//! 2. processors stop fetching (a job fetched at that moment stays in flight); the poller, the
//!    cron loop and the recovery loop stop, and the outbox relay once its batch is moved;
//! 3. running jobs get up to `shutdown_timeout` to finish and settle; at that deadline their
//!    contexts are cancelled (`ctx.cancelled()` resolves) and they get one more second;
//! 4. the successes of jobs under flow control not written yet are written (or those jobs
//!    would run again); then, once no fetch can still land a job, every job left in this
//!    process's in-flight lists (still running, or fetched as shutdown began) goes back to the
//!    head of its queue, and the lease on each emptied queue is given up in the same step; it
//!    will run again (at least once). What could not be put back stays leased: the heartbeat
//!    stops, the lease expires, and the fleet recovers it;
//! 5. the heartbeat stops; the process deregisters only if everything was put back, and
//!    `run_until` returns.

mod run;
mod start;
mod stop;

use crate::config::WorkerConfig;
use crate::middleware::Middleware;
use gator_core::{Client, Registry, StateMap};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

/// A worker: a fixed pool of processors and a poller, for one config. Made by
/// [`Worker::builder`]; nothing runs until [`Worker::run`] or [`Worker::run_until`].
#[derive(Debug)]
pub struct Worker {
    config: WorkerConfig,
    client: Option<Client>,
    registry: Arc<Registry>,
    states: StateMap,
    install_default_client: bool,
    middleware: Middleware,
}

impl Worker {
    pub(crate) fn from_parts(
        config: WorkerConfig,
        client: Option<Client>,
        registry: Arc<Registry>,
        states: StateMap,
        install_default_client: bool,
        middleware: Middleware,
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
        if self.config.log_to_stderr {
            crate::audible::log_to_stderr();
        }
        crate::audible::warn_if_unheard();
        let Some(started) = self.start(&stop).await? else {
            return Ok(()); // stopped before Redis was reachable: nothing was fetched
        };
        let running = started.run(&stop);
        stop.cancelled().await;
        running.stop().await;
        Ok(())
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
