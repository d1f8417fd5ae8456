//! Takes jobs for the processors of one worker process, always into that process's in-flight
//! lists (see `store::inflight`), so a job a process dies holding is recovered, never lost.
//!
//! **Slots.** A process holds at most `--concurrency` jobs: a job takes a slot when it is
//! fetched and gives it back once its outcome is written (a sync job abandoned at its timeout
//! keeps it until its thread ends, so no more than `--concurrency` job bodies ever run). A
//! fetch asks for one job per free slot, so batches are sized to the idle processors and a
//! process never sits on jobs another worker could be running.
//!
//! **An idle processor**, in [`Fetcher::next`]:
//! 1. takes a job another processor's fetch left for it;
//! 2. with a free slot, calls `fetch.lua` on each queue in this fetch's order, for up to one
//!    job per free slot, keeps the first and leaves the rest for the processors it wakes;
//! 3. every queue empty: blocks (BLMOVE) on the least-watched queue, if fewer processors block
//!    than there are queues, so with enough idle processors every queue is watched;
//! 4. otherwise waits until it is woken: a blocker got a job (there may be more), jobs were
//!    left for it, or a slot came free.

use crate::leases::Leases;
use crate::queues::{QueueOrder, Watchers};
use gator_core::Client;
use gator_core::client::MAX_BLOCK;
use gator_core::store::inflight::{self, Batch, Fetched, MAX_BATCH, MAX_TAKE};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
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
    /// Jobs fetched (with their slots) that no processor has taken yet.
    buffered: Mutex<VecDeque<Job>>,
    /// Every job this process received from a fetch and has not settled, by payload bytes
    /// (with a count, should one payload be in flight twice). An in-flight job missing here
    /// is stranded: its fetch's reply was lost.
    /// (FxHash: two lookups per job of a payload's bytes, where SipHash cost more than the
    /// rest of the bookkeeping.)
    held: Mutex<FxHashMap<Vec<u8>, usize>>,
    /// Which queue each blocked processor watches.
    watchers: Watchers,
    /// Processors blocked in Redis right now.
    blockers: AtomicUsize,
    /// Wakes one idle processor: work was buffered, a blocker returned, a slot came free.
    wake: Notify,
    /// Fetches under way; shutdown waits for none before putting jobs back.
    fetching: AtomicUsize,
    /// Dedicated connections not blocking right now: reused without the pool's PING.
    idle_connections: Mutex<Vec<deadpool_redis::Connection>>,
}

impl Fetcher {
    /// The fetcher of process `process`, holding at most `concurrency` jobs.
    pub fn new(
        client: Client,
        order: Arc<QueueOrder>,
        leases: Arc<Leases>,
        process: String,
        concurrency: usize,
    ) -> Fetcher {
        Fetcher {
            client,
            order,
            leases,
            process,
            slots: Arc::new(Semaphore::new(concurrency.max(1))),
            buffered: Mutex::new(VecDeque::new()),
            held: Mutex::new(FxHashMap::default()),
            watchers: Watchers::default(),
            blockers: AtomicUsize::new(0),
            wake: Notify::new(),
            fetching: AtomicUsize::new(0),
            idle_connections: Mutex::new(Vec::new()),
        }
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
        loop {
            if stop.is_cancelled() {
                return Ok(None);
            }
            // Registered before looking, so a wake-up between the look and the wait is kept.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(job) = self.take_buffered() {
                return Ok(Some(job));
            }
            let slots = match self.slots.clone().try_acquire_owned() {
                Ok(slot) => slot,
                // Every slot is taken: wait for a buffered job or a free slot.
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
            let slot = match self.fetch_pass(slots).await? {
                Found::Job(job) => return Ok(Some(job)),
                Found::Nothing(slot) => slot,
            };
            let queues = self.order.next_order();
            if self.blockers.fetch_add(1, Ordering::SeqCst) < queues.len() {
                let blocked = self.block(slot, &queues).await;
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

    /// Step 2: `fetch.lua` on each queue in this fetch's order, for one job per slot in
    /// `slots`, from the first queue that has any.
    async fn fetch_pass(&self, mut slots: OwnedSemaphorePermit) -> gator_core::Result<Found> {
        let free = self.slots.available_permits().min(MAX_BATCH - 1);
        if free > 0
            && let Ok(more) = self.slots.clone().try_acquire_many_owned(free as u32)
        {
            slots.merge(more);
        }
        let queues = self.order.next_order();
        if queues.is_empty() {
            // No queue known yet: nothing to fetch or block on. Wait as long as a blocking
            // fetch would, then look again (the poller refreshes the known-queues set).
            tokio::time::sleep(FETCH_TIMEOUT).await;
        }
        let (mut failed, mut failures) = (None, 0);
        for queue in &queues {
            // A queue that fails (a key of the wrong type) must not starve the others.
            let jobs = match self.fetch_from(queue, slots.num_permits()).await {
                Ok(jobs) => jobs,
                Err(e) => {
                    warn!(queue = %queue, error = %e, "could not fetch from the queue; trying the others");
                    failed = Some(e);
                    failures += 1;
                    continue;
                }
            };
            match self.hand_out(jobs, slots) {
                Ok(job) => return Ok(Found::Job(job)),
                Err(unused) => slots = unused,
            }
        }
        if let Some(e) = failed.filter(|_| failures == queues.len()) {
            return Err(e);
        }
        // Keep one slot for a blocking wait; give the rest back.
        if let Some(one) = slots.split(1) {
            slots = one;
        }
        Ok(Found::Nothing(slots))
    }

    /// Takes `jobs` (just fetched with `slots`, one per job at most): holds them, keeps the
    /// first for the caller, and leaves the rest, each with its slot, for the processors it
    /// wakes. Slots left over are given back. With no jobs, returns the slots unused.
    fn hand_out(
        &self,
        jobs: Vec<Fetched>,
        mut slots: OwnedSemaphorePermit,
    ) -> Result<Job, OwnedSemaphorePermit> {
        self.hold(&jobs);
        let mut jobs = jobs.into_iter();
        let Some(first) = jobs.next() else {
            return Err(slots);
        };
        let mut left = 0;
        {
            let mut buffered = self.lock_buffered();
            for fetched in jobs {
                // There is a slot per job: the fetch asked for no more than `slots` holds.
                let Some(slot) = slots.split(1) else { break };
                buffered.push_back(Job {
                    fetched,
                    slot: Slot(Arc::new(slot)),
                });
                left += 1;
            }
        }
        for _ in 0..left {
            self.wake.notify_one();
        }
        let slot = match slots.split(1) {
            Some(one) => one,
            None => slots,
        };
        Ok(Job {
            fetched: first,
            slot: Slot(Arc::new(slot)),
        })
    }

    /// Settles a success that starts no chain step with plain commands and, in the same
    /// `MULTI`, takes this processor's next jobs (one per free slot, its own included, up to
    /// [`MAX_TAKE`]) from the same queue, when this fetch's order would try that queue first
    /// anyway: a worker draining a queue pays one cheap round trip per job, with no script.
    /// Otherwise it only settles, and gives the slot back as soon as the `LREM` is sent. A
    /// chain step with a next step, or a failed call, comes back for the usual settle.
    pub async fn ack_and_next(
        &self,
        job: Job,
        chain: Option<&gator_core::payload::ChainLink>,
        stop: &CancellationToken,
    ) -> AckAndNext {
        if chain.is_some_and(|link| link.next_jid.is_some()) {
            return AckAndNext::NotTried(job);
        }
        let Job { fetched, slot } = job;
        let take = !stop.is_cancelled() && self.order.draws_first(&fetched.queue);
        let (mut spare, mut spare_shared) = (None, None);
        let slots = match (take, Arc::try_unwrap(slot.0)) {
            (true, Ok(mut own)) => {
                let free = self.slots.available_permits().min(MAX_TAKE - 1);
                if free > 0
                    && let Ok(more) = self.slots.clone().try_acquire_many_owned(free as u32)
                {
                    own.merge(more);
                }
                Some(own)
            }
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
        let call = inflight::ack_and_take(&mut conn, keys, &fetched, want);
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
                match slots {
                    Some(slots) => AckAndNext::Settled(self.hand_out(jobs, slots).ok()),
                    None => AckAndNext::Settled(None),
                }
            }
            Err(e) => AckAndNext::Failed(fetched, e),
        }
    }

    /// One `fetch.lua` call on `queue`, taking the lease first if this process holds none.
    async fn fetch_from(&self, queue: &str, want: usize) -> gator_core::Result<Vec<Fetched>> {
        if !self.leases.valid_for(queue, Duration::ZERO) {
            self.leases.acquire(queue).await?;
        }
        let keys = self.client.keys();
        let mut conn = self.client.connection();
        match inflight::fetch_batch(&mut conn, keys, queue, &self.process, want).await? {
            Batch::Jobs(jobs) => Ok(jobs),
            Batch::NoLease => {
                // Expired on Redis's clock before our own count ran out (a slow renewal): take
                // it again and retry once.
                self.leases.acquire(queue).await?;
                match inflight::fetch_batch(&mut conn, keys, queue, &self.process, want).await? {
                    Batch::Jobs(jobs) => Ok(jobs),
                    Batch::NoLease => Ok(Vec::new()),
                }
            }
        }
    }

    /// Step 3: BLMOVE on the least-watched queue for up to [`FETCH_TIMEOUT`], holding `slot`.
    async fn block(
        &self,
        slot: OwnedSemaphorePermit,
        queues: &[String],
    ) -> gator_core::Result<Option<Job>> {
        let Some(queue) = self.watchers.watch(queues) else {
            return Ok(None);
        };
        let blocked = self.block_on(&queue).await;
        self.watchers.unwatch(&queue);
        Ok(blocked?.map(|fetched| Job {
            fetched,
            slot: Slot(Arc::new(slot)),
        }))
    }

    async fn block_on(&self, queue: &str) -> gator_core::Result<Option<Fetched>> {
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
            Err(e) => {
                // It may be silent for good: close it rather than lend it again. A job the
                // server moved meanwhile is in flight, unheld, and released by recovery.
                drop(deadpool_redis::Connection::take(conn));
                Err(e)
            }
        }
    }

    fn hold(&self, jobs: &[Fetched]) {
        let mut held = self.lock_held();
        for job in jobs {
            *held.entry(job.raw.clone()).or_default() += 1;
        }
    }

    /// Records that `job` was settled (or left for recovery): it is no longer this process's
    /// to hold.
    pub fn settled(&self, job: &Fetched) {
        let mut held = self.lock_held();
        if let Some(count) = held.get_mut(&job.raw) {
            *count -= 1;
            if *count == 0 {
                held.remove(&job.raw);
            }
        }
    }

    /// Whether this process received the in-flight payload `raw` and has not settled it.
    pub fn holds(&self, raw: &[u8]) -> bool {
        self.lock_held().contains_key(raw)
    }

    /// Drops the buffered jobs of `queues` unstarted: their lease was lost, so other workers
    /// may run them already. Those still in flight are released by recovery.
    pub fn drop_buffered(&self, queues: &[String]) {
        if queues.is_empty() {
            return;
        }
        let dropped: Vec<Job> = {
            let mut buffered = self.lock_buffered();
            let (drop, keep): (Vec<Job>, Vec<Job>) = buffered
                .drain(..)
                .partition(|job| queues.contains(&job.fetched.queue));
            *buffered = keep.into();
            drop
        };
        for job in &dropped {
            self.settled(&job.fetched);
        }
    }

    /// How many fetches are under way.
    pub fn fetches_in_flight(&self) -> usize {
        self.fetching.load(Ordering::SeqCst)
    }

    fn take_buffered(&self) -> Option<Job> {
        self.lock_buffered().pop_front()
    }

    fn take_connection(&self) -> Option<deadpool_redis::Connection> {
        self.lock_connections().pop()
    }

    fn lock_buffered(&self) -> std::sync::MutexGuard<'_, VecDeque<Job>> {
        // A poisoned lock only means a panic between two whole-element operations.
        self.buffered.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_held(&self) -> std::sync::MutexGuard<'_, FxHashMap<Vec<u8>, usize>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_connections(&self) -> std::sync::MutexGuard<'_, Vec<deadpool_redis::Connection>> {
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
    /// The success is recorded (or the job was no longer in flight); maybe a next job.
    Settled(Option<Job>),
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
