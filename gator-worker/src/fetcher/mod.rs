//! Takes jobs for the processors of one worker process, always into that process's in-flight
//! lists (see `door::fetch`), so a job a process dies holding is recovered, never lost. It
//! only fetches: outcomes are written in [`crate::settle`], which may hand this processor's
//! next job over from a success's own round trip.
//!
//! **Slots.** A process holds at most `--concurrency` jobs: a job takes a slot when it is
//! fetched and gives it back once its outcome is written (a sync job abandoned at its timeout
//! keeps it until its thread ends, so no more than `--concurrency` job bodies ever run). Each
//! processor fetches its own next job, so a process never sits on jobs another worker could be
//! running, and every job's queue follows one draw of the weights.
//!
//! **An idle processor**, in [`Fetcher::next_from`]:
//! 1. with a free slot, calls `fetch.lua` on each queue in this fetch's order (starting with
//!    the queue its last success drew) until one has a job, in one call with the other idle
//!    processors that reach the same queue at the same moment (`Fetcher::fetch_one`);
//!    having got one, wakes two more idle processors, as the queue may hold more;
//! 2. every queue empty: blocks (BLMOVE) on the least-watched queue, if fewer processors block
//!    than there are queues ([`crate::watchers`]), so with enough idle processors every queue is
//!    watched. (With fewer idle processors than queues, some queue is unwatched: each timeout
//!    is followed by step 1.)
//! 3. otherwise waits until it is woken: a processor got a job (there may be more), a slot
//!    came free, or the poller found a queue not served before (with no queue known yet, a
//!    worker serving every known queue has nothing to block on: the first queue discovered
//!    wakes it).

mod beside;
mod pass;

use crate::slot::FetchGuard;
pub use crate::slot::{Job, Slot};

use crate::admission::Admission;
use crate::door::Fetched;
use crate::gather::Gathers;
use crate::held::Held;
use crate::leases::Leases;
use crate::outage::Outage;
use crate::queues::QueueOrder;
pub use crate::watchers::FETCH_TIMEOUT;
use crate::watchers::{Blocked, Watchers};
use gator_core::Client;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// How long a processor that neither blocks nor has work waits before looking again without
/// being woken: only a safety net, since every event that brings work wakes one (and blocked
/// processors look at every queue each [`FETCH_TIMEOUT`]). Long, because with 10,000 idle
/// processors even a rare look adds up.
const IDLE_RECHECK: Duration = Duration::from_secs(60);

/// Where an idle processor's first fetch pass starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// At a queue of a fresh draw.
    Draw,
    /// At this queue, which a success drew already ([`crate::settle`]), so that drawing again
    /// does not skew the weights.
    With(String),
    /// At the queues after this one, drawn by a success and found empty beside its write
    /// (`Fetcher::fetch_beside`).
    After(String),
}

impl From<Option<String>> for Start {
    /// At the queue a success drew, if it drew one.
    fn from(drawn: Option<String>) -> Start {
        drawn.map_or(Start::Draw, Start::With)
    }
}

/// The fetcher of one worker process, shared by its processors.
pub struct Fetcher {
    client: Client,
    order: Arc<QueueOrder>,
    leases: Arc<Leases>,
    process: String,
    slots: Arc<Semaphore>,
    /// Every job this process received from a fetch and has not settled.
    held: Arc<Held>,
    /// Admission from controlled queues: asynchronous acks and jobs taken ahead.
    admission: Arc<Admission>,
    /// The processors that block in Redis while every queue is empty (step 2).
    watchers: Watchers,
    /// Wakes one idle processor: work was buffered, a blocker returned, a slot came free.
    wake: Notify,
    /// Fetches under way; shutdown waits for none before putting jobs back.
    fetching: AtomicUsize,
    /// Idle processors' fetches gathering for one call, per queue.
    fetches: Gathers<(), Option<Fetched>>,
    /// `--concurrency`.
    concurrency: usize,
    /// Whether Redis is reachable, as this process's calls find it (logged as one event).
    outage: Arc<Outage>,
}

impl Fetcher {
    /// The fetcher of process `process`, holding at most `concurrency` jobs.
    pub fn new(
        client: Client,
        order: Arc<QueueOrder>,
        leases: Arc<Leases>,
        process: String,
        concurrency: usize,
        retention: Duration,
    ) -> Fetcher {
        let held = Arc::new(Held::default());
        let admission = Arc::new(Admission::new(
            client.clone(),
            leases.clone(),
            held.clone(),
            process.clone(),
            retention,
        ));
        let watchers = Watchers::new(
            client.clone(),
            order.clone(),
            leases.clone(),
            admission.clone(),
            held.clone(),
            process.clone(),
        );
        Fetcher {
            client,
            order,
            leases,
            process,
            slots: Arc::new(Semaphore::new(concurrency.max(1))),
            held,
            admission,
            watchers,
            wake: Notify::new(),
            fetching: AtomicUsize::new(0),
            fetches: Gathers::for_processors(concurrency),
            concurrency,
            outage: Arc::default(),
        }
    }

    /// How this process logs a Redis outage (see [`crate::outage`]).
    pub fn outage(&self) -> &Arc<Outage> {
        &self.outage
    }

    /// How many jobs this process holds at most: its processors.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// This fetcher, telling `observer` when a rate limiter holds a job back.
    pub fn with_observer(mut self, observer: Arc<crate::observer::Observer>) -> Fetcher {
        self.watchers.observer = observer;
        self
    }

    /// The id of the process whose in-flight lists this fetcher fills.
    pub fn process(&self) -> &str {
        &self.process
    }

    /// The queues this fetcher serves.
    pub fn order(&self) -> &QueueOrder {
        &self.order
    }

    /// The next job for an idle processor (see the module docs), or `None` once `stop` is
    /// cancelled. A job fetched as `stop` comes is left in flight, for shutdown to put back.
    pub async fn next(&self, stop: &CancellationToken) -> gator_core::Result<Option<Job>> {
        self.next_from(stop, Start::Draw).await
    }

    /// [`Fetcher::next`], its first fetch starting as `start` says: at the queue a success
    /// already drew ([`crate::settle`]), so that drawing again does not skew the weights, or
    /// past the one it found empty.
    pub async fn next_from(
        &self,
        stop: &CancellationToken,
        start: Start,
    ) -> gator_core::Result<Option<Job>> {
        let mut start = Some(start);
        loop {
            if stop.is_cancelled() {
                return Ok(None);
            }
            // Read before trying, so a queue discovered between the try and the wait is seen.
            let generation = self.order.generation();
            // Registered before trying, so a wake-up between the try and the wait is kept.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let slots = match self.slots.clone().try_acquire_owned() {
                Ok(slot) => slot,
                // Every slot is taken: wait for a free slot.
                Err(_) => tokio::select! {
                    _ = &mut woken => continue,
                    slot = self.slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => return Ok(None), // closed: the worker is going away
                    },
                    _ = stop.cancelled() => return Ok(None),
                },
            };
            let fetching = self.fetch_guard();
            let start = start.take().unwrap_or(Start::Draw);
            let slot = match self.fetch_pass(slots, start).await? {
                Found::Job(job) => {
                    // The queue may hold more: wake two more idle processors to look, so a
                    // burst brings every idle processor in after a few round trips.
                    self.wake.notify_one();
                    self.wake.notify_one();
                    return Ok(Some(job));
                }
                Found::Nothing(slot) => slot,
            };
            match self.watchers.block(slot, stop).await? {
                Blocked::Job(job) => {
                    // The queue may hold more, and it is unwatched until someone blocks again.
                    self.wake.notify_one();
                    return Ok(Some(job));
                }
                Blocked::Nothing => continue,
                Blocked::NotNeeded => {}
            }
            drop(fetching);
            if !self.park(woken.as_mut(), generation, stop).await {
                return Ok(None);
            }
        }
    }

    /// Step 3: waits until `woken`, until the poller finds a list not served before (with no
    /// queue known yet, that is the only news there can be), or [`IDLE_RECHECK`]; false once
    /// `stop` is cancelled. `woken` was registered, and `generation` read, before the fetch
    /// pass, so nothing that happened since is missed.
    async fn park(
        &self,
        woken: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
        generation: u64,
        stop: &CancellationToken,
    ) -> bool {
        let grown = self.order.grown().notified();
        tokio::pin!(grown);
        grown.as_mut().enable();
        if self.order.generation() != generation {
            return true;
        }
        tokio::select! {
            _ = woken => {}
            _ = &mut grown => {}
            _ = tokio::time::sleep(IDLE_RECHECK) => {}
            _ = stop.cancelled() => return false,
        }
        true
    }

    /// Records that a fetch handed these jobs to this process.
    pub(crate) fn hold(&self, jobs: &[Fetched]) {
        self.held.hold(jobs);
    }

    /// Records that `job` was settled (or left for recovery): it is no longer this process's
    /// to hold.
    pub fn settled(&self, job: &Fetched) {
        self.held.settled(job);
    }

    /// The held jobs' book ([`crate::held`]), for a durable job's saves, which rewrite its
    /// payload in flight.
    pub fn held(&self) -> &crate::held::Held {
        &self.held
    }

    /// Whether this process received the in-flight payload `raw` and has not settled it.
    pub fn holds(&self, raw: &[u8]) -> bool {
        self.held.holds(raw)
    }

    /// How many fetches are under way.
    pub fn fetches_in_flight(&self) -> usize {
        self.fetching.load(Ordering::SeqCst)
    }

    /// Counts one fetch in flight until dropped: shutdown waits for none before it puts this
    /// process's jobs back, so a fetch (or a success that takes the next job) must hold one.
    pub(crate) fn fetch_guard(&self) -> FetchGuard<'_> {
        self.fetching.fetch_add(1, Ordering::SeqCst);
        FetchGuard(&self.fetching)
    }

    /// The admissions from queues under flow control, which carry their successes too.
    pub(crate) fn admission(&self) -> &Arc<Admission> {
        &self.admission
    }

    /// This process's leases.
    pub(crate) fn leases(&self) -> &Leases {
        &self.leases
    }
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("process", &self.process)
            .field("free_slots", &self.slots.available_permits())
            .field("blockers", &self.watchers.blocked())
            .finish_non_exhaustive()
    }
}

/// What a fetch pass found: a job, or nothing (with the one slot kept for blocking).
enum Found {
    Job(Job),
    Nothing(OwnedSemaphorePermit),
}
