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
//!
//! A pass woken for a due job promotes at once: the queue list is read again only once an
//! interval has passed since the last read (not three round trips before every promotion),
//! and the jitter that keeps a fleet from waking together shrinks with the fleet, to none for
//! a lone worker (the first of N processes to wake comes about jitter / (N + 1) late), down to
//! a floor of [`MIN_PAUSE`]. With 10,000 sleeping durable jobs waking over 5 s on one worker,
//! both together took their lateness from 9.8 to 3.1 ms at the median and from 25 to 12 ms at
//! p99 (`gator-bench sleepers 10000`, medians of five interleaved runs on a shared two-core
//! machine), and a busy poller's calls from four a pass (three to read the queue list, one
//! to promote) at about 100 passes a second to one a pass at most 500 a second.

use crate::alarm::Alarm;
use crate::queues::QueueOrder;
use gator_core::Client;
use rand::RngExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
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
    /// When this poller last read the queue list (`None`: never).
    pub refreshed: std::sync::Mutex<Option<Instant>>,
}

/// The most jitter added to a pass woken for a due job, for a large fleet.
const JITTER_MS: f64 = 20.0;
/// The least pause after a pass, so that jobs coming due one after another (every half a
/// millisecond, say) are promoted a few at a time, not one pass each.
const MIN_PAUSE: Duration = Duration::from_millis(2);

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
        if self.refresh_due() {
            self.order.refresh(&self.client).await?;
            *self.refreshed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
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

    /// Whether the queue list is to be read again: never read, or last read an interval ago.
    fn refresh_due(&self) -> bool {
        let refreshed = *self.refreshed.lock().unwrap_or_else(|e| e.into_inner());
        refreshed.is_none_or(|at| at.elapsed() >= self.interval)
    }

    /// How long to sleep after `pass` ([`pause_for`] this poller's interval).
    pub fn pause_after(&self, pass: Pass) -> Duration {
        pause_for(self.interval, pass)
    }
}

/// How long a poller of `interval` sleeps after `pass`: a random 0.5–1.5 × the fleet's
/// interval, but no later than the next due time plus a jitter (at least [`MIN_PAUSE`]).
pub fn pause_for(interval: Duration, pass: Pass) -> Duration {
    let fleet_interval = interval.mul_f64(pass.processes as f64);
    let pause = fleet_interval.mul_f64(rand::rng().random_range(0.5..1.5));
    match pass.next_due_in {
        // Some jitter so a fleet waking for the same job does not arrive at once: up to
        // JITTER_MS × (N − 1) / N for N processes, none for one alone.
        Some(wait) => {
            let spread = JITTER_MS * (1.0 - 1.0 / pass.processes.max(1) as f64);
            let jitter = rand::rng().random_range(0.0..=spread) / 1000.0;
            pause.min((wait + Duration::from_secs_f64(jitter)).max(MIN_PAUSE))
        }
        None => pause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(processes: usize, due_in_ms: Option<u64>) -> Pass {
        Pass {
            moved: 0,
            next_due_in: due_in_ms.map(Duration::from_millis),
            processes,
        }
    }

    #[test]
    fn a_lone_poller_wakes_at_the_due_time_and_a_fleet_within_its_jitter() {
        let interval = Duration::from_secs(1);
        for _ in 0..100 {
            assert_eq!(
                pause_for(interval, pass(1, Some(30))),
                Duration::from_millis(30)
            );
            assert_eq!(pause_for(interval, pass(1, Some(0))), MIN_PAUSE);
            let fleet = pause_for(interval, pass(4, Some(30)));
            assert!(fleet >= Duration::from_millis(30), "{fleet:?}");
            assert!(fleet <= Duration::from_millis(45), "{fleet:?}");
            let idle = pause_for(interval, pass(2, None));
            assert!(idle >= Duration::from_secs(1) && idle <= Duration::from_secs(3));
        }
    }
}
