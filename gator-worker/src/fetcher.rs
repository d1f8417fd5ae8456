//! Takes jobs for the processors of one worker process, always into that process's in-flight
//! lists (see `store::inflight`), so a job a process dies holding is recovered, never lost. It
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
//! 3. otherwise waits until it is woken: a processor got a job (there may be more), or a slot
//!    came free.

use crate::slot::FetchGuard;
pub use crate::slot::{Job, Slot};

use crate::admission::Admission;
use crate::gather::{Gathers, Joined};
use crate::held::Held;
use crate::leases::Leases;
use crate::outage::Outage;
use crate::queues::QueueOrder;
use crate::watchers::{Blocked, Watchers};
use gator_core::Client;
use gator_core::client::MAX_BLOCK;
use gator_core::store::inflight::{self, Batch, Fetched, MAX_BATCH};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How long an idle processor blocks in Redis on one queue before looking at all of them
/// again. Bounds how late a job on a queue nobody watches is seen, and how long shutdown waits
/// for a blocked fetch (a blocking fetch is never cancelled mid-flight: the server would move
/// a job whose reply nobody reads).
pub const FETCH_TIMEOUT: Duration = MAX_BLOCK;

/// How long a processor that neither blocks nor has work waits before looking again without
/// being woken: only a safety net, since every event that brings work wakes one (and blocked
/// processors look at every queue each [`FETCH_TIMEOUT`]). Long, because with 10,000 idle
/// processors even a rare look adds up.
const IDLE_RECHECK: Duration = Duration::from_secs(60);

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
        self.next_from(stop, None).await
    }

    /// [`Fetcher::next`], its first fetch trying `first` first: the queue a success already
    /// drew ([`crate::settle`]), so that drawing again does not skew the weights.
    pub async fn next_from(
        &self,
        stop: &CancellationToken,
        mut first: Option<String>,
    ) -> gator_core::Result<Option<Job>> {
        loop {
            if stop.is_cancelled() {
                return Ok(None);
            }
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
            let slot = match self.fetch_pass(slots, first.take()).await? {
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
            tokio::select! {
                _ = &mut woken => {}
                _ = tokio::time::sleep(IDLE_RECHECK) => {}
                _ = stop.cancelled() => return Ok(None),
            }
        }
    }

    /// Step 1: a job for this processor's own slot, on each queue in this fetch's order
    /// (starting with the queue its last success drew, `first`) until one has a job.
    ///
    /// One job per processor, from its own draw: taking jobs for other idle processors from
    /// this processor's queue would make their jobs follow this draw instead of their own, and
    /// tilt the weights toward whichever queue they are on. Processors whose draws meet on one
    /// queue share one call ([`Fetcher::fetch_one`]); a worker draining a queue takes its next
    /// job with each success anyway ([`crate::settle`]).
    async fn fetch_pass(
        &self,
        slot: OwnedSemaphorePermit,
        first: Option<String>,
    ) -> gator_core::Result<Found> {
        let queues = match first {
            Some(first) => self.order.order_starting_with(&first),
            None => self.order.next_order(),
        };
        if queues.is_empty() {
            // No queue known yet: nothing to fetch or block on. Wait as long as a blocking
            // fetch would, then look again (the poller refreshes the known-queues set).
            tokio::time::sleep(FETCH_TIMEOUT).await;
        }
        let (mut failed, mut failures) = (None, 0);
        let mut slot = slot;
        for queue in &queues {
            // A queue that fails (a key of the wrong type) must not starve the others.
            let jobs = match self.fetch_one(queue).await {
                Ok(job) => {
                    self.outage.reached();
                    job.into_iter().collect()
                }
                Err(e) => {
                    // An outage is logged as one event; another error is this queue's.
                    if !self.outage.failed(&e) {
                        warn!(queue = %queue, error = %e, "could not fetch from the queue; trying the others");
                    }
                    failed = Some(e);
                    failures += 1;
                    continue;
                }
            };
            match self.hand_out(jobs, slot) {
                Ok(job) => return Ok(Found::Job(job)),
                Err(unused) => slot = unused,
            }
        }
        if let Some(e) = failed.filter(|_| failures == queues.len()) {
            return Err(e);
        }
        Ok(Found::Nothing(slot))
    }

    /// Takes what one fetch for one slot found (held already): gives it its slot, or gives the
    /// slot back if there was nothing. [`crate::settle`] hands over the next job a success
    /// took in its own round trip with it too.
    pub(crate) fn hand_out(
        &self,
        jobs: Vec<Fetched>,
        slot: OwnedSemaphorePermit,
    ) -> Result<Job, OwnedSemaphorePermit> {
        let mut jobs = jobs.into_iter();
        let Some(fetched) = jobs.next() else {
            return Err(slot);
        };
        // A fetch asks for one job: none is left over. (Were one, it would stay in flight,
        // unheld, and recovery would put it back.)
        Ok(Job::new(fetched, slot))
    }

    /// One job of `queue` for an idle processor, fetched with those of the other idle
    /// processors whose fetch reaches `queue` at the same moment ([`crate::gather`]): a burst
    /// that wakes many idle processors costs one `fetch.lua` call per queue, not one per
    /// processor, and each processor's job still comes from the queue its own draw named. A
    /// processor that gets none (the queue held fewer jobs than processors asked) goes on to
    /// the next queue of its draw. On a queue under flow control, one admission as before.
    async fn fetch_one(&self, queue: &str) -> gator_core::Result<Option<Fetched>> {
        if self.order.is_controlled(queue) {
            return Ok(self.fetch_from(queue, 1).await?.into_iter().next());
        }
        let job = match self.fetches.of(queue).join((), MAX_BATCH).await {
            Joined::Answer(job) => job,
            Joined::Lead(members, replies) => {
                let mut jobs = self.fetch_from(queue, members.len()).await?.into_iter();
                return Ok(replies.send(members.iter().map(|()| jobs.next())).flatten());
            }
            // Its leader's fetch failed (the leader reports it): nothing here this time.
            Joined::Lost => None,
        };
        // The leader's call found the queue under flow control (and got one admission, for
        // itself): each of the others asks the admission for its own, as it would have.
        if job.is_none() && self.order.is_controlled(queue) {
            return Ok(self.fetch_from(queue, 1).await?.into_iter().next());
        }
        Ok(job)
    }

    /// One `fetch.lua` call on `queue` (or an admission, on a queue under flow control),
    /// taking the lease first if this process holds none. The jobs come back held.
    async fn fetch_from(&self, queue: &str, want: usize) -> gator_core::Result<Vec<Fetched>> {
        if self.order.is_controlled(queue) {
            return Ok(self.admission.admit(queue, None, want > 0).await?.jobs);
        }
        if !self.leases.valid_for(queue, Duration::ZERO) {
            self.leases.acquire(queue).await?;
        }
        let keys = self.client.keys();
        let mut conn = self.client.connection();
        let mut retried = false;
        loop {
            match inflight::fetch_batch(&mut conn, keys, queue, &self.process, want).await? {
                Batch::Jobs(jobs) => {
                    self.hold(&jobs);
                    return Ok(jobs);
                }
                Batch::Controlled => {
                    // Became controlled since the last refresh: admit from now on.
                    self.order.mark_controlled(queue);
                    return Ok(self.admission.admit(queue, None, want > 0).await?.jobs);
                }
                // Expired on Redis's clock before our own count ran out (a slow renewal): take
                // it again and retry once.
                Batch::NoLease if !retried => {
                    self.leases.acquire(queue).await?;
                    retried = true;
                }
                Batch::NoLease => return Ok(Vec::new()),
            }
        }
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
