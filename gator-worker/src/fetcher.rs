//! Takes jobs for the processors of one worker process, always into that process's in-flight
//! lists (see `store::inflight`), so a job a process dies holding is recovered, never lost.
//!
//! **Slots.** A process holds at most `--concurrency` jobs: a job takes a slot when it is
//! fetched and gives it back once its outcome is written (a sync job abandoned at its timeout
//! keeps it until its thread ends, so no more than `--concurrency` job bodies ever run). Each
//! processor fetches its own next job, so a process never sits on jobs another worker could be
//! running, and every job's queue follows one draw of the weights.
//!
//! **A processor that finished a job** settles it and, when its draw for the next fetch picks
//! the same queue, takes its next job in the same round trip ([`Fetcher::ack_and_next`]).
//!
//! **An idle processor**, in [`Fetcher::next_from`]:
//! 1. with a free slot, calls `fetch.lua` on each queue in this fetch's order (starting with
//!    the queue its last ack drew) until one has a job; having got one, wakes two more idle
//!    processors, as the queue may hold more;
//! 2. every queue empty: blocks (BLMOVE) on the least-watched queue, if fewer processors block
//!    than there are queues, so with enough idle processors every queue is watched. A block
//!    that times out blocks again on the same queue at once, without step 1, for as long as
//!    every queue is watched: then no queue got a job meanwhile, and an idle worker costs each
//!    node one BLMOVE per watcher per timeout, not a script per queue. (With fewer idle
//!    processors than queues, some queue is unwatched: each timeout is followed by step 1.)
//! 3. otherwise waits until it is woken: a processor got a job (there may be more), or a slot
//!    came free.

use crate::admission::Admission;
use crate::held::Held;
use crate::leases::Leases;
use crate::queues::{QueueOrder, Watchers};
use gator_core::Client;
use gator_core::client::MAX_BLOCK;
use gator_core::connection::Dedicated;
use gator_core::store::admit::{self, NextLook};
use gator_core::store::inflight::{self, Batch, Fetched};
use gator_core::store::status::Done;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How long an idle processor blocks in Redis on one queue before looking at all of them
/// again. Bounds how late a job on a queue nobody watches is seen, and how long shutdown waits
/// for a blocked fetch (a blocking fetch is never cancelled mid-flight: the server would move
/// a job whose reply nobody reads).
pub const FETCH_TIMEOUT: Duration = MAX_BLOCK;

/// How long a lease must still hold for a processor to block: the server moves a job at most
/// [`FETCH_TIMEOUT`] after it received the BLMOVE, and the margin covers the trip there.
pub const BLOCK_LEASE_MARGIN: Duration = Duration::from_secs(2);

/// How long a processor that neither blocks nor has work waits before looking again without
/// being woken: only a safety net, since every event that brings work wakes one (and blocked
/// processors look at every queue each [`FETCH_TIMEOUT`]). Long, because with 10,000 idle
/// processors even a rare look adds up.
const IDLE_RECHECK: Duration = Duration::from_secs(60);

/// A fetched job and the slot it holds until its outcome is written.
#[derive(Debug)]
pub struct Job {
    /// The job as fetched.
    pub fetched: Fetched,
    /// Its slot; clone it into whatever must hold the slot longer (a sync job's thread).
    pub slot: Slot,
}

/// One of the `--concurrency` slots, given back when the last clone is dropped.
#[derive(Clone)]
pub struct Slot(#[allow(dead_code)] Arc<OwnedSemaphorePermit>);

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
    /// Which queue each blocked processor watches.
    watchers: Watchers,
    /// Processors blocked in Redis right now.
    blockers: AtomicUsize,
    /// Wakes one idle processor: work was buffered, a blocker returned, a slot came free.
    wake: Notify,
    /// Fetches under way; shutdown waits for none before putting jobs back.
    fetching: AtomicUsize,
    /// The controlled queues one of this process's processors sleeps on until their rate
    /// limiter's next start ([`Fetcher::wait_on_controlled`]).
    timers: Mutex<HashSet<String>>,
    /// Wakes a processor waiting for a rate timer that was handed on.
    timer_free: Notify,
    /// Dedicated connections not blocking right now, one per processor that blocked at once
    /// (so never more than there are queues: see step 2).
    idle_connections: Mutex<Vec<Dedicated>>,
    /// Told when a rate limiter holds a job back (for the metrics).
    observer: Arc<crate::observer::Observer>,
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
        Fetcher {
            client,
            order,
            leases,
            process,
            slots: Arc::new(Semaphore::new(concurrency.max(1))),
            held,
            admission,
            watchers: Watchers::default(),
            blockers: AtomicUsize::new(0),
            wake: Notify::new(),
            fetching: AtomicUsize::new(0),
            idle_connections: Mutex::new(Vec::new()),
            timers: Mutex::new(HashSet::new()),
            timer_free: Notify::new(),
            observer: Arc::default(),
        }
    }

    /// This fetcher, telling `observer` when a rate limiter holds a job back.
    pub fn with_observer(mut self, observer: Arc<crate::observer::Observer>) -> Fetcher {
        self.observer = observer;
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

    /// [`Fetcher::next`], its first fetch trying `first` first: the queue an ack already drew
    /// ([`Fetcher::ack_and_next`]), so that drawing again does not skew the weights.
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
            let _fetching = FetchGuard::new(&self.fetching);
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
            let queues = self.order.next_order();
            if self.blockers.fetch_add(1, Ordering::SeqCst) < queues.len() {
                let blocked = self.block(slot, &queues, stop).await;
                self.blockers.fetch_sub(1, Ordering::SeqCst);
                if let Some(job) = blocked? {
                    // The queue may hold more, and it is unwatched until someone blocks again.
                    self.wake.notify_one();
                    return Ok(Some(job));
                }
                continue;
            }
            self.blockers.fetch_sub(1, Ordering::SeqCst);
            drop(slot);
            drop(_fetching);
            tokio::select! {
                _ = &mut woken => {}
                _ = tokio::time::sleep(IDLE_RECHECK) => {}
                _ = stop.cancelled() => return Ok(None),
            }
        }
    }

    /// Step 1: `fetch.lua` for this processor's own slot, on each queue in this fetch's order
    /// (starting with the queue its last ack drew, `first`) until one has a job.
    ///
    /// One job per fetch, for its own processor only: taking jobs for other idle processors
    /// would make their jobs follow this processor's draw instead of their own, and tilt the
    /// weights toward whichever queue they are on. A worker draining a queue fetches in its
    /// acks anyway ([`Fetcher::ack_and_next`]).
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
            let jobs = match self.fetch_from(queue, 1).await {
                Ok(jobs) => jobs,
                Err(e) => {
                    warn!(queue = %queue, error = %e, "could not fetch from the queue; trying the others");
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
    /// slot back if there was nothing.
    fn hand_out(
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
        Ok(Job {
            fetched,
            slot: Slot(Arc::new(slot)),
        })
    }

    /// Settles a success that starts no chain step with plain commands and, in the same
    /// `MULTI`, takes this processor's next job from the same queue, when this processor's next
    /// fetch draws that queue first anyway: a worker draining a queue pays one cheap round trip
    /// per job, with no script. When the draw picks another queue, the next fetch starts there.
    /// Otherwise it only settles, and gives the slot back as soon as the `LREM` is sent. A
    /// success with a hand-off (a chain step with a next step, a workflow step), or a failed
    /// call, comes back for the usual settle.
    pub async fn ack_and_next(
        &self,
        job: Job,
        handoff: Option<&str>,
        done: &Done<'_>,
        stop: &CancellationToken,
    ) -> AckAndNext {
        if handoff.is_some() {
            return AckAndNext::NotTried(job);
        }
        if job.fetched.admitted {
            return self.ack_admitted_and_next(job, done.tail(), stop).await;
        }
        let Job { fetched, slot } = job;
        // One draw decides this fetch's first queue, here or in the next `next_from`.
        let drawn = self.order.draw_first();
        // The draw names a queue; the next job comes from the same list (shard) as this one.
        let take = !stop.is_cancelled()
            && drawn.as_deref() == Some(gator_core::shards::logical_queue(&fetched.queue));
        let (mut spare, mut spare_shared) = (None, None);
        let slots = match (take, Arc::try_unwrap(slot.0)) {
            // Only its own slot: another processor's free slot would make its next job follow
            // this draw, not its own, and tilt the weights toward the queue in hand.
            (true, Ok(own)) => Some(own),
            // Not taking: the slot goes back once the LREM is on its way (see
            // `settle::sent_then`), or, shared with a sync body's thread, once that ends too.
            (_, Ok(own)) => {
                spare = Some(own);
                None
            }
            (_, Err(shared)) => {
                spare_shared = Some(shared);
                None
            }
        };
        let keys = self.client.keys();
        let mut conn = self.client.connection();
        let want = slots.as_ref().map_or(0, |s| s.num_permits());
        let _fetching = FetchGuard::new(&self.fetching);
        let call = inflight::ack_and_take(&mut conn, keys, &fetched, done, want);
        let acked = crate::settle::sent_then(call, move || {
            drop(spare);
            drop(spare_shared);
        })
        .await;
        match acked {
            Ok((settled, jobs)) => {
                self.settled(&fetched);
                if !settled {
                    warn!(queue = %fetched.queue, "job was no longer in flight: an earlier write whose reply was lost recorded its outcome, or it was recovered and will run again");
                    // Presumed dead and recovered: index the list the jobs just taken sit in.
                    if let Err(e) = self.leases.acquire(&fetched.queue).await {
                        warn!(queue = %fetched.queue, error = %e, "could not renew the lease after a recovery");
                    }
                }
                self.hold(&jobs);
                match slots.map(|slots| self.hand_out(jobs, slots)) {
                    Some(Ok(next)) => AckAndNext::Settled(Some(next), None),
                    // Nothing taken from this queue: the next fetch starts where the draw said.
                    Some(Err(_)) | None => AckAndNext::Settled(None, drawn),
                }
            }
            Err(e) => AckAndNext::Failed(fetched, e),
        }
    }

    /// [`Fetcher::ack_and_next`] for a job admitted from a queue under flow control: its
    /// success goes to the queue's [`Admission`], which writes it with its next call (the job
    /// stays held until then), and, when the draw picks the same queue, this processor's next
    /// job comes from the jobs taken ahead, or from that call.
    async fn ack_admitted_and_next(
        &self,
        job: Job,
        tail: String,
        stop: &CancellationToken,
    ) -> AckAndNext {
        let Job { fetched, slot } = job;
        let drawn = self.order.draw_first();
        let take = !stop.is_cancelled() && drawn.as_deref() == Some(fetched.queue.as_str());
        let _fetching = FetchGuard::new(&self.fetching);
        let own = match (take, Arc::try_unwrap(slot.0)) {
            (true, Ok(own)) => Some(own),
            // Not taking (or a sync body's thread still shares the slot): ack alone.
            (_, unused) => {
                drop(unused);
                None
            }
        };
        let queue = fetched.queue.clone();
        match self
            .admission
            .admit(&queue, Some((fetched, tail)), own.is_some())
            .await
        {
            Ok(turn) => match own.map(|own| self.hand_out(turn.jobs, own)) {
                Some(Ok(next)) => AckAndNext::Settled(Some(next), None),
                Some(Err(_)) | None => AckAndNext::Settled(None, drawn),
            },
            // The success is in the admission's hands; only the next job failed: fetch again.
            Err(_) => AckAndNext::Settled(None, drawn),
        }
    }

    /// Writes the pending successes of jobs under flow control, for shutdown (see
    /// [`Admission::flush`]).
    pub async fn flush_admissions(&self, deadline: tokio::time::Instant) {
        self.admission.flush(deadline).await;
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

    /// Step 2: BLMOVE on the least-watched queue, holding `slot`, again after each
    /// [`FETCH_TIMEOUT`] while every queue served is watched (a processor stays counted as a
    /// watcher across its blocks, so a timeout never looks like an unwatched queue).
    async fn block(
        &self,
        slot: OwnedSemaphorePermit,
        queues: &[String],
        stop: &CancellationToken,
    ) -> gator_core::Result<Option<Job>> {
        let Some(queue) = self.watchers.watch(queues) else {
            return Ok(None);
        };
        let blocked = loop {
            match self.block_on(&queue).await {
                // Compared with the queues served now: a queue that became known since is
                // unwatched, and the caller's pass finds and watches it.
                Ok(None)
                    if !stop.is_cancelled()
                        && self.blockers.load(Ordering::SeqCst) >= self.order.len() => {}
                done => break done,
            }
        };
        self.watchers.unwatch(&queue);
        Ok(blocked?.map(|fetched| Job {
            fetched,
            slot: Slot(Arc::new(slot)),
        }))
    }

    async fn block_on(&self, queue: &str) -> gator_core::Result<Option<Fetched>> {
        if self.order.is_controlled(queue) {
            return self.wait_on_controlled(queue).await;
        }
        // BLMOVE cannot check a lease, so the lease must outlast the wait: a process that
        // could not renew stops here before its lease runs out.
        if !self.leases.valid_for(queue, BLOCK_LEASE_MARGIN) {
            self.leases.acquire(queue).await?;
            if !self.leases.valid_for(queue, BLOCK_LEASE_MARGIN) {
                tokio::time::sleep(FETCH_TIMEOUT).await;
                return Ok(None);
            }
        }
        let mut conn = match self.take_connection() {
            Some(conn) => conn,
            None => self.client.dedicated_connection().await?,
        };
        let keys = self.client.keys();
        match inflight::fetch_blocking(&mut conn, keys, queue, &self.process, FETCH_TIMEOUT).await {
            Ok(job) => {
                self.hold(job.as_slice());
                self.lock_connections().push(conn);
                if job.is_some() && !self.leases.valid_for(queue, Duration::ZERO) {
                    // Paused past the lease while blocked: the list the job landed in may
                    // have been recovered and forgotten. Index it again before running it.
                    self.leases.acquire(queue).await?;
                }
                Ok(job)
            }
            Err(e) if e.is_controlled_queue() => {
                // The queue came under flow control: nothing moved; admit from it from now on.
                self.lock_connections().push(conn);
                self.order.mark_controlled(queue);
                Ok(None)
            }
            Err(e) => {
                // It may be silent for good: close it rather than use it again. A job the
                // server moved meanwhile is in flight, unheld, and released by recovery.
                drop(conn);
                Err(e)
            }
        }
    }

    /// Step 2 on a queue under flow control, where nothing can be moved by a blocking command:
    /// admits, and if nothing may start, waits for the queue's signal (a job parked, units
    /// released, a resume) or, when a rate limiter holds a job back, until it may start (the
    /// local clock only times the sleep: the script decides on Redis time), then admits once more.
    async fn wait_on_controlled(&self, queue: &str) -> gator_core::Result<Option<Fetched>> {
        let admitted = self.admission.admit(queue, None, true).await?;
        if let Some(job) = self.held_one(admitted.jobs) {
            return Ok(Some(job));
        }
        if let NextLook::At(at) = admitted.next {
            let wait = Duration::from_millis(at.saturating_sub(admitted.now_ms));
            self.observer.limiter_wait(queue, wait);
        }
        match admitted.next {
            NextLook::At(at)
                if at.saturating_sub(admitted.now_ms) < FETCH_TIMEOUT.as_millis() as u64 =>
            {
                // One processor per queue sleeps until a rate limiter's next start; the others
                // wait for it to take that start and hand the timer on, so a process sends one
                // admit per start, not one per idle processor.
                if !self.claim_timer(queue) {
                    tokio::select! {
                        _ = self.timer_free.notified() => {}
                        _ = tokio::time::sleep(FETCH_TIMEOUT) => {}
                    }
                    let admitted = self.admission.admit(queue, None, true).await?;
                    return Ok(self.held_one(admitted.jobs));
                }
                tokio::time::sleep(Duration::from_millis(at.saturating_sub(admitted.now_ms))).await;
                let admitted = self.admission.admit(queue, None, true).await;
                self.lock_timers().remove(queue);
                self.timer_free.notify_one();
                return Ok(self.held_one(admitted?.jobs));
            }
            _ => {
                let mut conn = match self.take_connection() {
                    Some(conn) => conn,
                    None => self.client.dedicated_connection().await?,
                };
                let keys = self.client.keys();
                let wait = match admitted.next {
                    NextLook::At(at) => Duration::from_millis(at.saturating_sub(admitted.now_ms)),
                    _ => FETCH_TIMEOUT,
                }
                .min(FETCH_TIMEOUT);
                // A silent connection is closed rather than used again.
                admit::wait_for_signal(&mut conn, keys, queue, wait).await?;
                self.lock_connections().push(conn);
            }
        }
        let admitted = self.admission.admit(queue, None, true).await?;
        Ok(self.held_one(admitted.jobs))
    }

    /// Whether this processor now holds `queue`'s rate timer (no other one did).
    fn claim_timer(&self, queue: &str) -> bool {
        self.lock_timers().insert(queue.to_owned())
    }

    fn lock_timers(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.timers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The one job an admission for one slot returned (held already), if any.
    fn held_one(&self, jobs: Vec<Fetched>) -> Option<Fetched> {
        jobs.into_iter().next()
    }

    fn hold(&self, jobs: &[Fetched]) {
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

    fn take_connection(&self) -> Option<Dedicated> {
        self.lock_connections().pop()
    }

    fn lock_connections(&self) -> std::sync::MutexGuard<'_, Vec<Dedicated>> {
        self.idle_connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("process", &self.process)
            .field("free_slots", &self.slots.available_permits())
            .field("blockers", &self.blockers.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Slot")
    }
}

/// What [`Fetcher::ack_and_next`] did.
#[derive(Debug)]
pub enum AckAndNext {
    /// The success is recorded (or the job was no longer in flight): the next job, or else the
    /// queue the next fetch must try first.
    Settled(Option<Job>, Option<String>),
    /// Not tried: settle the job as usual.
    NotTried(Job),
    /// The call failed (it may or may not have run): settle the job as usual, which retries.
    /// Its slot is given back already.
    Failed(Fetched, gator_core::Error),
}

/// What a fetch pass found: a job, or nothing (with the one slot kept for blocking).
enum Found {
    Job(Job),
    Nothing(OwnedSemaphorePermit),
}

/// Counts one fetch in flight until dropped.
struct FetchGuard<'a>(&'a AtomicUsize);

impl<'a> FetchGuard<'a> {
    fn new(counter: &'a AtomicUsize) -> FetchGuard<'a> {
        counter.fetch_add(1, Ordering::SeqCst);
        FetchGuard(counter)
    }
}

impl Drop for FetchGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
