//! This process's leases: one per queue it fetches from, taken before the first fetch from the
//! queue, renewed by the heartbeat every quarter of their length, given up at a clean stop.
//!
//! A lease lives in the queue's own hash tag (`gator:{<queue>}:leases`) and expires on Redis's
//! clock. While it holds, no other worker touches this process's in-flight jobs of the queue;
//! once it has expired, any worker's recovery puts them back in the queue. So a process that
//! cannot renew (Redis unreachable, a frozen connection) must stop fetching before its leases
//! run out: [`Leases::valid_for`] says whether one surely still holds, measured on this host's
//! monotonic clock from the moment the renewal was sent, which is never later than the moment
//! Redis started counting.

use crate::clock::RedisClock;
use crate::door::LeaseState;
use gator_core::Client;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tracing::{error, info, warn};

/// The lease length unless `--lease` says otherwise: four renewals (every 5 s), so a stalled
/// event loop or a Redis blip does not get a live worker's jobs run twice, while a crashed
/// worker's jobs wait at most this long (plus a few ms) before they run again.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(20);

/// The shortest lease `--lease` accepts: renewed every quarter of it, it must always hold for
/// longer than a blocking fetch needs ([`crate::watchers::BLOCK_LEASE_MARGIN`]).
pub const MIN_LEASE: Duration = Duration::from_secs(4);

/// How long an expired lease's entry stays in a queue's lease set, with its list emptied at
/// every recovery pass, before it is forgotten: long past anything a paused process could
/// still land in its list after its lease ran out.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);

/// The leases one worker process holds.
#[derive(Debug)]
pub struct Leases {
    client: Client,
    process: String,
    ttl: Duration,
    clock: Arc<RedisClock>,
    /// Each leased queue's lease.
    held: Mutex<HashMap<String, Held>>,
    /// Whether the last renewal pass failed, so that the log says when it works again.
    failing: AtomicBool,
}

/// One lease, on this host's monotonic clock.
#[derive(Debug, Clone, Copy)]
struct Held {
    /// Until when it surely holds.
    until: Instant,
    /// When a renewal last found it lost (or left after `until`), if ever.
    lapsed: Option<Instant>,
}

impl Leases {
    /// The leases of `process`, each lasting `ttl` unless renewed.
    pub fn new(client: Client, process: String, ttl: Duration, clock: Arc<RedisClock>) -> Leases {
        Leases {
            client,
            process,
            ttl,
            clock,
            held: Mutex::new(HashMap::new()),
            failing: AtomicBool::new(false),
        }
    }

    /// How long each lease lasts unless renewed.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// How often the heartbeat renews them: four times per lease.
    pub fn renew_every(&self) -> Duration {
        self.ttl / 4
    }

    /// Takes (or renews) the lease on `queue`. Returns true if this process had held it and it
    /// had been lost meanwhile: its in-flight jobs of the queue may have been put back.
    pub async fn acquire(&self, queue: &str) -> gator_core::Result<bool> {
        let sent = Instant::now();
        let (state, now) = crate::door::presence(&self.client)
            .renew_lease(queue, &self.process, self.ttl)
            .await?;
        self.clock.observe(now);
        let held = self.lock().contains_key(queue);
        let lost = state == LeaseState::Expired || (held && state == LeaseState::New);
        self.renewed(queue, sent, lost);
        Ok(lost)
    }

    /// Renews every lease held, in one round trip; returns whether it worked (and logs each
    /// lease that had been lost meanwhile). A failed renewal keeps the old deadlines; past
    /// them, [`Leases::valid_for`] is false and the fetcher stops fetching from those queues.
    pub async fn renew_all(&self) -> bool {
        let queues: Vec<String> = self.lock().keys().cloned().collect();
        let sent = Instant::now();
        let renewed = crate::door::presence(&self.client)
            .renew_leases(&queues, &self.process, self.ttl)
            .await;
        let (states, now) = match renewed {
            Ok(renewed) => renewed,
            Err(e) => {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    error!(error = %e, lease_ms = self.ttl.as_millis() as u64, "cannot renew this process's leases: fetching stops before they expire, and resumes once redis answers again");
                }
                return false;
            }
        };
        if self.failing.swap(false, Ordering::Relaxed) {
            info!("leases renewed again: fetching resumes");
        }
        if now > 0 {
            self.clock.observe(now);
        }
        for (queue, state) in queues.into_iter().zip(states) {
            self.renewed(&queue, sent, state != LeaseState::Live);
        }
        true
    }

    /// After a renewal of the lease on `queue` sent at `sent`: its new deadline, and a note
    /// that the lease may have run out if Redis said so (`lost`, logged), or if the renewal
    /// left after the old deadline. Redis's answer alone misses a lapse when an earlier
    /// renewal, sent before a partition and timed out here, reached Redis once it healed: that
    /// one found the lease expired, its answer was lost, and it made the lease live again.
    fn renewed(&self, queue: &str, sent: Instant, lost: bool) {
        if lost {
            warn!(queue, process = %self.process, "this process's lease had expired (it was paused or cut off from redis for longer than the lease, or another live worker uses its --worker-id): its in-flight jobs of the queue may run twice");
        }
        let mut held = self.lock();
        let before = held.get(queue).copied();
        let late = before.is_some_and(|lease| sent >= lease.until);
        let lapsed = if lost || late {
            Some(Instant::now())
        } else {
            before.and_then(|lease| lease.lapsed)
        };
        let until = sent + self.ttl;
        held.insert(queue.to_owned(), Held { until, lapsed });
    }

    /// Whether the lease on `queue` may have run out lately: it does not surely hold now, or a
    /// renewal within the last lease length found it lost. A job of the queue found no longer
    /// in flight then was most likely put back by recovery, and runs again.
    pub fn ran_out_lately(&self, queue: &str) -> bool {
        if !self.valid_for(queue, Duration::ZERO) {
            return true;
        }
        self.lock()
            .get(queue)
            .and_then(|lease| lease.lapsed)
            .is_some_and(|at| at.elapsed() < self.ttl)
    }

    /// Whether jobs of `queue` may be taken into this process's in-flight list by plain
    /// `LMOVE`s, which no script checks against the lease in Redis: only while the lease surely
    /// holds for half its length more. Half, not a quarter: a renewal a failed master
    /// acknowledged and never replicated leaves the new master's entry one renewal older than
    /// this count, and a job taken under a lease that lapsed there runs twice once recovery
    /// puts it back.
    pub fn takes_plainly(&self, queue: &str) -> bool {
        self.valid_for(queue, self.ttl / 2)
    }

    /// Whether the lease on `queue` surely holds for at least `margin` more.
    pub fn valid_for(&self, queue: &str, margin: Duration) -> bool {
        self.lock()
            .get(queue)
            .is_some_and(|lease| Instant::now() + margin < lease.until)
    }

    /// Stops renewing the lease on `queue` (it was given up, or must be left to expire).
    pub fn forget(&self, queue: &str) {
        self.lock().remove(queue);
    }

    /// The queues leased.
    pub fn queues(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        // A poisoned lock only means a panic between two whole-entry operations.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}
