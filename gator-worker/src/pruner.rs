//! The pruner: keeps each served queue's finished jobs' status records to
//! `--finished-max-jobs` (see `Upkeep::trim_finished`), as the dead set is kept to
//! `--dead-max-jobs`, and ends the `done` records kept in queued-mark buckets once they are
//! older than `--retention` (a record with a key of its own expires by itself). So Redis's
//! memory does not grow with throughput × retention.
//!
//! Like the poller, each process sleeps a random 0.5–1.5 × (a second × live processes), so the
//! fleet trims each queue about once a second whatever its size; a queue under its count costs
//! one short script call.

use crate::queues::QueueOrder;
use gator_core::Client;
use rand::RngExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// How often the fleet as a whole trims each queue.
pub const PRUNE_EVERY: Duration = Duration::from_secs(1);

/// Trims the finished records of the worker's queues.
pub struct Pruner {
    /// Where the records live.
    pub client: Client,
    /// The queues served.
    pub order: Arc<QueueOrder>,
    /// How many finished jobs' records each queue keeps.
    pub keep: usize,
    /// How long a finished job's record is kept.
    pub retention: Duration,
    /// The live processes of the fleet, as the heartbeat last counted them.
    pub fleet: Arc<AtomicUsize>,
    /// How this process logs a Redis outage ([`crate::outage`]).
    pub outage: Arc<crate::outage::Outage>,
}

impl Pruner {
    /// Trims until `stop` is cancelled.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            let processes = self.fleet.load(Ordering::Relaxed).max(1) as f64;
            let pause = PRUNE_EVERY.mul_f64(processes * rand::rng().random_range(0.5..1.5));
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.cancelled() => return,
            }
            self.pass().await;
        }
    }

    /// One pass over every served queue; a queue that fails is logged and left for the next.
    pub async fn pass(&self) {
        let mut upkeep = crate::door::upkeep(&self.client);
        for queue in self.order.all() {
            match upkeep
                .trim_finished(&queue, self.keep, self.retention)
                .await
            {
                Ok(0) => {}
                Ok(removed) => debug!(queue = %queue, removed, "trimmed finished jobs' records"),
                Err(e) => self.outage.unless_outage(&e, || {
                    warn!(queue = %queue, error = %e, "could not trim the queue's finished jobs' records; trying again next pass");
                }),
            }
        }
    }
}
