//! Start, step 4 (see [`crate::launcher`]): every piece starts, each as its own task. The
//! heartbeat, the cancellation reader and the observer outlive the processors, so they are
//! stopped apart from the rest ([`Running::stop`]).

use super::start::Started;
use crate::cancellation::Cancels;
use crate::cron::{Cron, REFRESH_POLLS};
use crate::fetcher::Fetcher;
use crate::heartbeat::Heartbeat;
use crate::poller::Poller;
use crate::processor::Processor;
use crate::pruner::Pruner;
use crate::recovery::Recovery;
use crate::settle::Settler;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A running worker: what [`Running::stop`] needs to shut it down in order.
pub(super) struct Running {
    /// The processors, the poller, the cron loop and the recovery loop: they stop with `stop`.
    pub(super) tracker: TaskTracker,
    /// Cancelled at the shutdown deadline: every running job's context is.
    pub(super) deadline: CancellationToken,
    pub(super) shutdown_timeout: Duration,
    pub(super) fetcher: Arc<Fetcher>,
    pub(super) settler: Arc<Settler>,
    pub(super) recovery: Arc<Recovery>,
    pub(super) heartbeat: Arc<Heartbeat>,
    /// Stops the heartbeat, the cancellation reader and the observer, after the processors.
    pub(super) heartbeat_stop: CancellationToken,
    /// Those three tasks, in that order.
    pub(super) background: Vec<JoinHandle<()>>,
}

impl Started {
    /// Starts every piece (start, step 4); they run until `stop` is cancelled.
    pub(super) fn run(self, stop: &CancellationToken) -> Running {
        // The heartbeat outlives the processors: their jobs stay leased until put back.
        let heartbeat_stop = CancellationToken::new();
        let (cancels, background) = self.spawn_background(&heartbeat_stop);
        let tracker = TaskTracker::new();
        tracker.spawn(self.recovery.clone().run(stop.clone(), self.first_pass));
        let deadline = CancellationToken::new();
        self.spawn_processors(&tracker, stop, &deadline, &cancels);
        self.spawn_loops(&tracker, stop);
        #[cfg(feature = "postgres")]
        self.spawn_outbox_relay(&tracker, stop);
        tracker.close();
        Running {
            tracker,
            deadline,
            shutdown_timeout: self.config.shutdown_timeout,
            fetcher: self.fetcher,
            settler: self.settler,
            recovery: self.recovery,
            heartbeat: self.heartbeat,
            heartbeat_stop,
            background,
        }
    }

    /// The tasks that stop with the heartbeat: the heartbeat; the cancellation reader, read
    /// until then so that a job cancelled while shutdown waits for it is told; the observer,
    /// after the processors, so the last outcomes are counted too.
    fn spawn_background(&self, until: &CancellationToken) -> (Arc<Cancels>, Vec<JoinHandle<()>>) {
        let heartbeat = tokio::spawn(self.heartbeat.clone().run(until.clone()));
        let outage = self.fetcher.outage().clone();
        let cancels = Cancels::new(self.client.clone(), self.leases.clone(), outage);
        let cancels_task = tokio::spawn(cancels.clone().run(until.clone()));
        let served = self.order.clone();
        let observer = tokio::spawn(self.observer.clone().run(
            self.client.clone(),
            self.clock.clone(),
            move || served.all(),
            until.clone(),
        ));
        (cancels, vec![heartbeat, cancels_task, observer])
    }

    /// `--concurrency` processors.
    fn spawn_processors(
        &self,
        tracker: &TaskTracker,
        stop: &CancellationToken,
        deadline: &CancellationToken,
        cancels: &Arc<Cancels>,
    ) {
        let progress = crate::progress::ProgressStore::writer(self.client.clone());
        let durable =
            crate::durable::DurableStore::writer(self.client.clone(), self.fetcher.clone());
        for id in 0..self.config.concurrency {
            let processor = Processor {
                id,
                client: self.client.clone(),
                registry: self.registry.clone(),
                fetcher: self.fetcher.clone(),
                settler: self.settler.clone(),
                clock: self.clock.clone(),
                states: self.states.clone(),
                deadline: deadline.clone(),
                cancels: cancels.clone(),
                service: self.middleware.layers.service(),
                observer: self.observer.clone(),
                catalogue: self.catalogue.clone(),
                progress: progress.clone(),
                durable: durable.clone(),
                stopping: stop.clone(),
            };
            tracker.spawn(processor.run(stop.clone()));
        }
    }

    /// The outbox relay, with `--outbox`: it stops with the processors, after its batch.
    #[cfg(feature = "postgres")]
    fn spawn_outbox_relay(&self, tracker: &TaskTracker, stop: &CancellationToken) {
        if let Some(outbox) = &self.config.outbox {
            tracker.spawn(crate::outbox::relay::run(
                outbox.clone(),
                self.client.clone(),
                self.heartbeat.id.clone(),
                stop.clone(),
            ));
        }
    }

    /// The poller, the pruner and the cron loop.
    fn spawn_loops(&self, tracker: &TaskTracker, stop: &CancellationToken) {
        let poller = Poller {
            client: self.client.clone(),
            order: self.order.clone(),
            interval: self.config.poll_interval,
            fleet: self.heartbeat.fleet.clone(),
            alarm: self.settler.alarm(),
            outage: self.fetcher.outage().clone(),
            refreshed: std::sync::Mutex::new(None),
        };
        tracker.spawn(poller.run(stop.clone()));
        let pruner = Pruner {
            client: self.client.clone(),
            order: self.order.clone(),
            keep: self.config.finished_max_jobs,
            retention: self.config.retention,
            fleet: self.heartbeat.fleet.clone(),
            outage: self.fetcher.outage().clone(),
        };
        tracker.spawn(pruner.run(stop.clone()));
        // The entries declared in code for the jobs this worker runs (checked by the builder).
        let declared = gator_core::cron::declared()
            .unwrap_or_default()
            .into_iter()
            .filter(|entry| self.registry.get(&entry.job).is_some())
            .collect();
        let cron = Cron {
            client: self.client.clone(),
            declared,
            refresh: self.config.poll_interval * REFRESH_POLLS,
            outage: self.fetcher.outage().clone(),
        };
        tracker.spawn(cron.run(stop.clone()));
        tracker.spawn(self.catalogue.clone().run(stop.clone()));
    }
}
