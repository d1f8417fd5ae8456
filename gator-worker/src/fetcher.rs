//! Picks the next job: orders the queues for each fetch (strict, weighted shuffle, or every
//! known queue) and moves the first job waiting in that order into this process's in-flight
//! list.

use crate::config::QueueSelection;
use gator_core::Client;
use gator_core::store::inflight::{self, Fetched};
use rand::RngExt;
use rand::seq::SliceRandom;
use redis::aio::ConnectionLike;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::Duration;

/// How long an idle processor blocks in Redis on one queue before looking at all of them
/// again. Bounds how late a job on a queue no idle processor watches is seen, and how long
/// shutdown waits for a blocked fetch (a blocking fetch is never cancelled mid-flight: the
/// server would move a job whose reply nobody reads).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(1);

/// The queues a worker serves and the order to try them in.
#[derive(Debug)]
pub struct QueueOrder {
    selection: QueueSelection,
    /// For [`QueueSelection::AllKnown`]: the known-queues set as last read.
    known: RwLock<Vec<String>>,
}

impl QueueOrder {
    /// The order for `selection`; with `AllKnown` it is empty until [`QueueOrder::refresh`].
    pub fn new(selection: QueueSelection) -> QueueOrder {
        QueueOrder {
            selection,
            known: RwLock::new(Vec::new()),
        }
    }

    /// Re-reads the known-queues set (only used when no `--queues` was given).
    pub async fn refresh(&self, client: &Client) -> gator_core::Result<()> {
        if self.selection == QueueSelection::AllKnown {
            let known = client.known_queues().await?;
            *self.known.write().unwrap_or_else(|e| e.into_inner()) = known;
        }
        Ok(())
    }

    /// Every queue served, in no particular order (the poller promotes due jobs into these).
    pub fn all(&self) -> Vec<String> {
        match &self.selection {
            QueueSelection::Strict(q) => q.clone(),
            QueueSelection::Weighted(q) => q.iter().map(|(name, _)| name.clone()).collect(),
            QueueSelection::AllKnown => {
                self.known.read().unwrap_or_else(|e| e.into_inner()).clone()
            }
        }
    }

    /// The order to try the queues in for one fetch.
    pub fn next_order(&self) -> Vec<String> {
        let mut rng = rand::rng();
        match &self.selection {
            QueueSelection::Strict(q) => q.clone(),
            QueueSelection::Weighted(q) => weighted_shuffle(q, &mut rng),
            QueueSelection::AllKnown => {
                let mut queues = self.all();
                queues.shuffle(&mut rng);
                queues
            }
        }
    }
}

/// Orders `queues` by weighted random sampling without replacement (Efraimidis–Spirakis:
/// sort by `u^(1/w)`): a queue comes first with probability weight / total weight, and each
/// later place likewise among the rest, so a heavy queue is favoured and a light one never starves.
pub fn weighted_shuffle(queues: &[(String, u32)], rng: &mut impl rand::Rng) -> Vec<String> {
    let mut keyed: Vec<(f64, &str)> = queues
        .iter()
        .map(|(name, weight)| {
            (
                rng.random::<f64>().powf(1.0 / f64::from(*weight)),
                name.as_str(),
            )
        })
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    keyed.into_iter().map(|(_, name)| name.to_owned()).collect()
}

/// Takes jobs for the processors of one worker process, always into that process's in-flight
/// lists (see `store::inflight`), so a job a process dies holding is recovered, never lost.
#[derive(Debug)]
pub struct Fetcher {
    client: Client,
    order: Arc<QueueOrder>,
    process: String,
    /// The most jobs one fetch call moves into flight (the worker's concurrency).
    batch: usize,
    /// Jobs already in flight that no processor has taken yet.
    fetched: Mutex<VecDeque<Fetched>>,
    /// Every job this process received from a fetch and has not settled, by payload text (with
    /// a count, should one text be in flight twice). An in-flight job missing here is stranded.
    held: Mutex<HashMap<String, usize>>,
    /// Spreads idle processors' blocking waits over the queues, round robin.
    next_watch: AtomicUsize,
    /// Fetches in flight; shutdown waits for zero before putting in-flight jobs back.
    fetching: AtomicUsize,
}

impl Fetcher {
    /// A fetcher for process `process` serving `order`, moving up to `batch` jobs per call.
    pub fn new(client: Client, order: Arc<QueueOrder>, process: String, batch: usize) -> Fetcher {
        Fetcher {
            client,
            order,
            process,
            batch: batch.max(1),
            fetched: Mutex::new(VecDeque::new()),
            held: Mutex::new(HashMap::new()),
            next_watch: AtomicUsize::new(0),
            fetching: AtomicUsize::new(0),
        }
    }

    /// The id of the process whose in-flight lists this fetcher fills.
    pub fn process(&self) -> &str {
        &self.process
    }

    /// The next job, or `None` after up to [`FETCH_TIMEOUT`] with nothing to do.
    ///
    /// 1. A job another fetch already moved into flight, if one is waiting here.
    /// 2. `fetch.lua` on each queue in this fetch's order (weighted, strict or shuffled), on
    ///    the shared connection: up to a batch of jobs in one round trip from the first
    ///    non-empty queue; the rest wait here for the next processors.
    /// 3. Every queue empty: block (BLMOVE) on one queue on `dedicated`, the processor's own
    ///    connection. Idle processors take the queues in turn, so with at least as many idle
    ///    processors as queues every queue is watched and a new job starts at once; otherwise
    ///    a job on an unwatched queue waits at most `FETCH_TIMEOUT`.
    pub async fn fetch(
        &self,
        dedicated: &mut impl ConnectionLike,
    ) -> gator_core::Result<Option<Fetched>> {
        if let Some(job) = self.take_fetched() {
            return Ok(Some(job));
        }
        let _in_flight = FetchGuard::new(&self.fetching);
        let queues = self.order.next_order();
        if queues.is_empty() {
            // No queue known yet: nothing to block on. Wait as long as a blocking fetch would,
            // then look again (the poller refreshes the known-queues set meanwhile).
            tokio::time::sleep(FETCH_TIMEOUT).await;
            return Ok(None);
        }
        let keys = self.client.keys();
        let mut shared = self.client.connection();
        for queue in &queues {
            let batch =
                inflight::fetch_batch(&mut shared, keys, queue, &self.process, self.batch).await?;
            self.hold(&batch);
            let mut jobs = batch.into_iter();
            if let Some(first) = jobs.next() {
                self.lock_fetched().extend(jobs);
                return Ok(Some(first));
            }
        }
        let watched = &queues[self.next_watch.fetch_add(1, Ordering::Relaxed) % queues.len()];
        let job = inflight::fetch_blocking(dedicated, keys, watched, &self.process, FETCH_TIMEOUT)
            .await?;
        self.hold(job.as_slice());
        Ok(job)
    }

    fn hold(&self, jobs: &[Fetched]) {
        let mut held = self.lock_held();
        for job in jobs {
            *held.entry(job.raw.clone()).or_default() += 1;
        }
    }

    /// Records that `job` was settled (or handed back): it is no longer this process's to hold.
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
    pub fn holds(&self, raw: &str) -> bool {
        self.lock_held().contains_key(raw)
    }

    /// The queues this fetcher serves.
    pub fn order(&self) -> &QueueOrder {
        &self.order
    }

    fn lock_held(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        // A poisoned lock only means a panic between two whole-entry operations.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take_fetched(&self) -> Option<Fetched> {
        self.lock_fetched().pop_front()
    }

    fn lock_fetched(&self) -> std::sync::MutexGuard<'_, VecDeque<Fetched>> {
        // A poisoned lock only means a panic between two whole-element operations.
        self.fetched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many fetches are under way.
    pub fn fetches_in_flight(&self) -> usize {
        self.fetching.load(Ordering::SeqCst)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_shuffle_puts_a_queue_first_in_proportion_to_its_weight() {
        let queues = vec![("high".to_owned(), 3), ("default".to_owned(), 1)];
        let mut rng = rand::rng();
        let draws = 40_000;
        let high_first = (0..draws)
            .filter(|_| weighted_shuffle(&queues, &mut rng)[0] == "high")
            .count();
        let share = high_first as f64 / draws as f64;
        // Expected 0.75; the standard deviation over 40k draws is about 0.002.
        assert!(
            (share - 0.75).abs() < 0.015,
            "high came first {share:.3} of the time"
        );
    }

    #[test]
    fn weighted_shuffle_keeps_every_queue_once() {
        let queues = vec![
            ("a".to_owned(), 5),
            ("b".to_owned(), 1),
            ("c".to_owned(), 2),
        ];
        let mut order = weighted_shuffle(&queues, &mut rand::rng());
        order.sort();
        assert_eq!(order, vec!["a", "b", "c"]);
    }

    #[test]
    fn strict_order_is_always_the_given_order() {
        let order = QueueOrder::new(QueueSelection::Strict(vec![
            "critical".into(),
            "default".into(),
        ]));
        for _ in 0..100 {
            assert_eq!(order.next_order(), vec!["critical", "default"]);
        }
    }
}
