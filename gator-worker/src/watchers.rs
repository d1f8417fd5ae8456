//! The idle processors that wait in Redis while every queue is empty (step 2 of the fetch, see
//! [`crate::fetcher`]): which queue each one watches, the dedicated connections they block on,
//! and, on a queue under flow control, the one processor per queue that sleeps until its rate
//! limiter's next start.
//!
//! A processor blocks only while fewer processors block than there are queues, each on the
//! least-watched queue, so with enough idle processors every queue is watched and a job pushed
//! to any of them starts at once. A block that times out blocks again on the same queue at once,
//! for as long as every queue is watched: then no queue got a job meanwhile, and an idle worker
//! costs each node one BLMOVE per watcher per timeout, not a script per queue.

use crate::admission::Admission;
use crate::door::{Fetched, NextLook};
use crate::held::Held;
use crate::leases::Leases;
use crate::observer::Observer;
use crate::queues::QueueOrder;
use crate::slot::Job;
use gator_core::Client;
use gator_core::client::MAX_BLOCK;
use gator_core::connection::Dedicated;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

/// How long an idle processor blocks in Redis on one queue before looking at all of them
/// again. Bounds how late a job on a queue nobody watches is seen, and how long shutdown waits
/// for a blocked fetch (a blocking fetch is never cancelled mid-flight: the server would move
/// a job whose reply nobody reads).
pub const FETCH_TIMEOUT: Duration = MAX_BLOCK;

/// How long a lease must still hold for a processor to block: the server moves a job at most
/// [`FETCH_TIMEOUT`] after it received the BLMOVE, and the margin covers the trip there.
pub const BLOCK_LEASE_MARGIN: Duration = Duration::from_secs(2);

/// The idle processors of one worker process that block in Redis.
pub struct Watchers {
    client: Client,
    order: Arc<QueueOrder>,
    leases: Arc<Leases>,
    admission: Arc<Admission>,
    /// Every job this process received from a fetch and has not settled.
    held: Arc<Held>,
    process: String,
    /// Which queue each blocked processor watches.
    watched: Watched,
    /// Processors blocked in Redis right now.
    blocked: AtomicUsize,
    /// The controlled queues one of this process's processors sleeps on until their rate
    /// limiter's next start ([`Watchers::wait_on_controlled`]).
    timers: Mutex<HashSet<String>>,
    /// Wakes a processor waiting for a rate timer that was handed on.
    timer_free: Notify,
    /// Dedicated connections not blocking right now, one per processor that blocked at once
    /// (so never more than there are queues).
    idle_connections: Mutex<Vec<Dedicated>>,
    /// Told when a rate limiter holds a job back (for the metrics).
    pub(crate) observer: Arc<Observer>,
}

/// What a processor that had nothing to fetch got from [`Watchers::block`].
#[derive(Debug)]
pub enum Blocked {
    /// A job, holding the processor's slot.
    Job(Job),
    /// Nothing yet (the wait timed out, or the queue came under flow control): look again.
    Nothing,
    /// Every queue is watched already: no block; the slot is given back. Wait to be woken.
    NotNeeded,
}

impl Watchers {
    /// The watchers of process `process`, which holds what they receive in `held`.
    pub fn new(
        client: Client,
        order: Arc<QueueOrder>,
        leases: Arc<Leases>,
        admission: Arc<Admission>,
        held: Arc<Held>,
        process: String,
    ) -> Watchers {
        Watchers {
            client,
            order,
            leases,
            admission,
            held,
            process,
            watched: Watched::default(),
            blocked: AtomicUsize::new(0),
            timers: Mutex::new(HashSet::new()),
            timer_free: Notify::new(),
            idle_connections: Mutex::new(Vec::new()),
            observer: Arc::default(),
        }
    }

    /// How many processors block in Redis right now.
    pub fn blocked(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// Blocks on the least-watched queue of a fresh fetch order, holding `slot`, if fewer
    /// processors block than there are queues; again after each [`FETCH_TIMEOUT`] while every
    /// queue served is watched (a processor stays counted as a watcher across its blocks, so a
    /// timeout never looks like an unwatched queue).
    pub async fn block(
        &self,
        slot: OwnedSemaphorePermit,
        stop: &CancellationToken,
    ) -> gator_core::Result<Blocked> {
        let queues = self.order.next_order();
        if self.blocked.fetch_add(1, Ordering::SeqCst) >= queues.len() {
            self.blocked.fetch_sub(1, Ordering::SeqCst);
            return Ok(Blocked::NotNeeded);
        }
        let seen = self.order.passing().generation();
        let blocked = self.watch(&queues, stop).await;
        self.blocked.fetch_sub(1, Ordering::SeqCst);
        Ok(match blocked? {
            Some(fetched) => Blocked::Job(Job::new(fetched, slot, seen)),
            None => Blocked::Nothing,
        })
    }

    /// Picks the queue to watch and blocks on it until a job comes, or until it is no longer
    /// the case that every queue is watched.
    async fn watch(
        &self,
        queues: &[String],
        stop: &CancellationToken,
    ) -> gator_core::Result<Option<Fetched>> {
        let Some(queue) = self.watched.watch(queues) else {
            return Ok(None);
        };
        let blocked = loop {
            match self.block_on(&queue, stop).await {
                // Compared with the queues served now: a queue that became known since is
                // unwatched, and the caller's pass finds and watches it. A queue whose jobs
                // this worker passes over in part is looked at by the caller's pass instead.
                Ok(None)
                    if !stop.is_cancelled()
                        && self.blocked.load(Ordering::SeqCst) >= self.order.len()
                        && !self.order.passing().passes(&queue) => {}
                done => break done,
            }
        };
        self.watched.unwatch(&queue);
        blocked
    }

    /// One wait on `queue`: a BLMOVE into this process's in-flight list, or, on a queue under
    /// flow control, [`Watchers::wait_on_controlled`]. On a queue whose jobs this worker passes
    /// over in part ([`crate::queues::passing`]), a BLMOVE would take whatever comes, and one
    /// that came back at once would spin: it waits [`FETCH_TIMEOUT`] instead, and the caller
    /// looks again with a fetch that passes over them.
    async fn block_on(
        &self,
        queue: &str,
        stop: &CancellationToken,
    ) -> gator_core::Result<Option<Fetched>> {
        if self.order.is_controlled(queue) {
            return self.wait_on_controlled(queue).await;
        }
        if self.order.passing().passes(queue) {
            tokio::select! {
                _ = tokio::time::sleep(FETCH_TIMEOUT) => {}
                _ = stop.cancelled() => {}
            }
            return Ok(None);
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
        let mut fetch = crate::door::blocking(&self.client, self.dedicated().await?);
        let fetched = fetch
            .fetch_blocking(queue, &self.process, FETCH_TIMEOUT)
            .await;
        match fetched {
            Ok(job) => {
                self.held.hold(job.as_slice());
                self.lock_connections().push(fetch.into_connection());
                if job.is_some() && !self.leases.valid_for(queue, Duration::ZERO) {
                    // Paused past the lease while blocked: the list the job landed in may
                    // have been recovered and forgotten. Index it again before running it.
                    self.leases.acquire(queue).await?;
                }
                Ok(job)
            }
            Err(e) if e.is_controlled_queue() => {
                // The queue came under flow control: nothing moved; admit from it from now on.
                self.lock_connections().push(fetch.into_connection());
                self.order.mark_controlled(queue);
                Ok(None)
            }
            // It may be silent for good: it is dropped here, closed rather than used again. A
            // job the server moved meanwhile is in flight, unheld, and released by recovery.
            Err(e) => Err(e),
        }
    }

    /// A wait on a queue under flow control, where nothing can be moved by a blocking command:
    /// admits, and if nothing may start, waits for the queue's signal (a job parked, units
    /// released, a resume) or, when a rate limiter holds a job back, until it may start (the
    /// local clock only times the sleep: the script decides on Redis time), then admits once more.
    async fn wait_on_controlled(&self, queue: &str) -> gator_core::Result<Option<Fetched>> {
        let admitted = self.admission.admit(queue, None, true).await?;
        if let Some(job) = admitted.jobs.into_iter().next() {
            return Ok(Some(job));
        }
        let wait = match admitted.next {
            NextLook::At(at) => {
                let wait = Duration::from_millis(at.saturating_sub(admitted.now_ms));
                self.observer.limiter_wait(queue, wait);
                Some(wait)
            }
            _ => None,
        };
        match wait {
            Some(wait) if wait < FETCH_TIMEOUT => return self.wait_for_start(queue, wait).await,
            _ => {
                let mut fetch = crate::door::blocking(&self.client, self.dedicated().await?);
                // A silent connection is closed rather than used again.
                let wait = wait.unwrap_or(FETCH_TIMEOUT).min(FETCH_TIMEOUT);
                fetch.wait_for_signal(queue, wait).await?;
                self.lock_connections().push(fetch.into_connection());
            }
        }
        let admitted = self.admission.admit(queue, None, true).await?;
        Ok(admitted.jobs.into_iter().next())
    }

    /// Waits `wait` for a rate limiter's next start, then admits. One processor per queue
    /// sleeps until it; the others wait for it to take that start and hand the timer on, so a
    /// process sends one admit per start, not one per idle processor.
    async fn wait_for_start(
        &self,
        queue: &str,
        wait: Duration,
    ) -> gator_core::Result<Option<Fetched>> {
        if !self.lock_timers().insert(queue.to_owned()) {
            tokio::select! {
                _ = self.timer_free.notified() => {}
                _ = tokio::time::sleep(FETCH_TIMEOUT) => {}
            }
            let admitted = self.admission.admit(queue, None, true).await?;
            return Ok(admitted.jobs.into_iter().next());
        }
        tokio::time::sleep(wait).await;
        let admitted = self.admission.admit(queue, None, true).await;
        self.lock_timers().remove(queue);
        self.timer_free.notify_one();
        Ok(admitted?.jobs.into_iter().next())
    }

    /// An idle dedicated connection, or a new one.
    async fn dedicated(&self) -> gator_core::Result<Dedicated> {
        // Taken apart from the match: the lock must not be held across the connect.
        let idle = self.lock_connections().pop();
        match idle {
            Some(conn) => Ok(conn),
            None => self.client.dedicated_connection().await,
        }
    }

    fn lock_timers(&self) -> MutexGuard<'_, HashSet<String>> {
        self.timers.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_connections(&self) -> MutexGuard<'_, Vec<Dedicated>> {
        self.idle_connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchers")
            .field("blocked", &self.blocked())
            .finish_non_exhaustive()
    }
}

/// How many idle processors watch (block on) each queue, so that the next one to block picks
/// a queue nobody watches: with at least as many blocking processors as queues, every queue is
/// watched and a job pushed to any of them starts at once.
#[derive(Debug, Default)]
pub struct Watched {
    counts: Mutex<HashMap<String, usize>>,
}

impl Watched {
    /// Picks the queue to watch among `candidates` (in order of preference: the fetch's
    /// weighted order): the least watched one, the first such on a tie. Counts it watched
    /// until [`Watched::unwatch`].
    pub fn watch(&self, candidates: &[String]) -> Option<String> {
        let mut counts = self.lock();
        let chosen = candidates
            .iter()
            .min_by_key(|queue| counts.get(queue.as_str()).copied().unwrap_or(0))?
            .clone();
        *counts.entry(chosen.clone()).or_default() += 1;
        Some(chosen)
    }

    /// A processor stopped watching `queue`.
    pub fn unwatch(&self, queue: &str) {
        let mut counts = self.lock();
        if let Some(count) = counts.get_mut(queue) {
            *count -= 1;
            if *count == 0 {
                counts.remove(queue);
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        // A poisoned lock only means a panic between two whole-entry operations.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocking_processors_spread_over_every_queue_before_any_is_watched_twice() {
        let queues: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let watched = Watched::default();
        let mut first_four: Vec<String> = (0..4).filter_map(|_| watched.watch(&queues)).collect();
        first_four.sort();
        assert_eq!(first_four, queues);
        // One watcher of "c" leaves (it got a job): the next to block takes "c" again, whatever
        // the order of preference says.
        watched.unwatch("c");
        let preference: Vec<String> = ["d", "a", "c", "b"].map(String::from).to_vec();
        assert_eq!(watched.watch(&preference).as_deref(), Some("c"));
        assert_eq!(
            watched.watch(&preference).as_deref(),
            Some("d"),
            "a tie goes to the preferred queue"
        );
        assert_eq!(watched.watch(&[]), None);
    }
}
