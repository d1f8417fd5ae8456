//! The poller: moves due scheduled and retry jobs into their queues.
//!
//! The fleet as a whole should pass about once per poll interval, whatever its size, so each
//! process sleeps a random 0.5–1.5 × (interval × live processes), as Sidekiq does. It never
//! sleeps past the earliest due time the last pass saw, so an idle worker starts a scheduled
//! job within milliseconds of its due time instead of up to a whole interval late; and a job
//! this process retries or reschedules rings its [`Alarm`], so it wakes for that one too.
//!
//! Redis's clock decides what is due (`promote_due.lua` reads `TIME`), and the script says how
//! long until the next job is due: this host's clock only decides how long to sleep.

use crate::alarm::Alarm;
use crate::queues::QueueOrder;
use gator_core::Client;
use rand::RngExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// Promotes due jobs of the worker's queues.
pub struct Poller {
    /// Where the sets live.
    pub client: Client,
    /// The queues served; also refreshed here when the worker serves every known queue.
    pub order: Arc<QueueOrder>,
    /// The fleet-wide average time between passes.
    pub interval: Duration,
    /// The live processes of the fleet, as the heartbeat last counted them.
    pub fleet: Arc<AtomicUsize>,
    /// Rung by this process's settler for a job it wrote due sooner than the next pass.
    pub alarm: Arc<Alarm>,
    /// How this process logs a Redis outage ([`crate::outage`]).
    pub outage: Arc<crate::outage::Outage>,
}

/// What one pass found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pass {
    /// Jobs moved to their queues.
    pub moved: usize,
    /// How long until the earliest job still waiting is due, over all queues served.
    pub next_due_in: Option<Duration>,
    /// Live worker processes, this one included.
    pub processes: usize,
}

impl Poller {
    /// Polls until `stop` is cancelled.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            // Cleared before the pass reads Redis: a job written after this rings it again.
            self.alarm.clear();
            let pause = match self.tick().await {
                Ok(pass) => self.pause_after(pass),
                Err(e) => {
                    self.outage.unless_outage(
                        &e,
                        || warn!(error = %e, "could not promote due jobs; trying again next pass"),
                    );
                    self.interval
                }
            };
            tokio::select! {
                _ = self.alarm.sleep(pause) => {}
                _ = stop.cancelled() => return,
            }
        }
    }

    /// One pass: refresh the queue list, then promote what is due in each queue. A queue that
    /// fails (a key of the wrong type) is logged and skipped; the others are still promoted.
    pub async fn tick(&self) -> gator_core::Result<Pass> {
        self.order.refresh(&self.client).await?;
        let mut upkeep = crate::door::upkeep(&self.client);
        let mut pass = Pass {
            processes: self.fleet.load(Ordering::Relaxed).max(1),
            ..Pass::default()
        };
        for queue in self.order.all() {
            let promoted = match upkeep.promote_due(&queue).await {
                Ok(promoted) => promoted,
                Err(e) => {
                    self.outage.unless_outage(&e, || warn!(queue = %queue, error = %e, "could not promote the queue's due jobs; trying again next pass"));
                    continue;
                }
            };
            pass.moved += promoted.moved;
            pass.next_due_in = match (pass.next_due_in, promoted.next_due_in) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        if pass.moved > 0 {
            debug!(moved = pass.moved, "promoted due jobs");
        }
        Ok(pass)
    }

    /// How long to sleep after `pass`.
    pub fn pause_after(&self, pass: Pass) -> Duration {
        let fleet_interval = self.interval.mul_f64(pass.processes as f64);
        let pause = fleet_interval.mul_f64(rand::rng().random_range(0.5..1.5));
        match pass.next_due_in {
            // A few ms of jitter so a fleet waking for the same job does not arrive at once.
            Some(wait) => pause.min(wait + Duration::from_millis(rand::rng().random_range(0..20))),
            None => pause,
        }
    }
}
