//! Every put-back: the in-flight jobs of processes whose lease expired, this process's own jobs
//! whose fetch reply was lost, and this process's jobs at shutdown. Each goes back to the head
//! of its queue in one atomic script.
//!
//! A process is dead when Redis says its lease expired: `recover.lua` checks each lease on
//! Redis's clock and moves that process's jobs in the same step, one queue at a time, so a
//! live process is never recovered and no host's clock is compared with another's. The
//! queue's lease set is its in-flight index, so nothing here needs the process registry, a
//! host name or a pid.

use crate::door::{Fetched, PutBack};
use crate::fetcher::Fetcher;
use crate::leases::{FORGET_AFTER, Leases};
use gator_core::Client;
use rand::RngExt;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

/// How often, at most, a worker looks for dead processes and stranded jobs; it looks sooner
/// when a lease it saw is about to expire.
pub const RECOVERY_INTERVAL: Duration = Duration::from_secs(5);

/// Looks for dead processes and recovers their jobs, and for this process's stranded ones.
#[derive(Debug)]
pub struct Recovery {
    /// Where the leases and the lists live.
    pub client: Client,
    /// This process's fetcher: its id, the queues it serves, the jobs it holds.
    pub fetcher: Arc<Fetcher>,
    /// This process's leases (what it must put back at shutdown).
    pub leases: Arc<Leases>,
    /// The prefix of the ids of the processes recovered at start whatever their leases (the
    /// `--worker-id`, or this process's host, pid and lineage), and the prefix of this OS
    /// process's own workers' ids, never recovered (see [`crate::identity`]).
    pub predecessors: Option<(String, String)>,
    /// Own in-flight jobs no processor held at the last pass, by queue and payload.
    pub unheld: Mutex<HashSet<(String, Vec<u8>)>>,
    /// The longest time between passes.
    pub interval: Duration,
}

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pass {
    /// Jobs put back in their queues.
    pub recovered: usize,
    /// How long until the earliest lease of another process it saw expires.
    pub next_expiry_in: Option<Duration>,
}

impl Recovery {
    /// A recovery loop for the process whose fetcher is `fetcher`.
    pub fn new(
        client: Client,
        fetcher: Arc<Fetcher>,
        leases: Arc<Leases>,
        predecessors: Option<(String, String)>,
        interval: Duration,
    ) -> Recovery {
        Recovery {
            client,
            fetcher,
            leases,
            predecessors,
            unheld: Mutex::new(HashSet::new()),
            interval,
        }
    }

    /// Passes until `stop`: every `interval` (jittered), or just after the earliest lease the
    /// last pass saw expires, whichever is sooner, so a dead worker's jobs run again within
    /// milliseconds of its lease running out.
    pub async fn run(self: Arc<Self>, stop: CancellationToken, mut last: Pass) {
        loop {
            let mut pause = self.interval.mul_f64(rand::rng().random_range(0.5..1.0));
            if let Some(expiry) = last.next_expiry_in {
                pause = pause.min(expiry + Duration::from_millis(rand::rng().random_range(1..50)));
            }
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.cancelled() => return,
            }
            last = self.tick(false).await;
        }
    }

    /// Ends the waits for replies whose time ran out, and carries every completion (a reply
    /// delivered, a wait ended) left in the replies' outbox to its job's queue.
    async fn replies(&self, store: &mut PutBack<'_>) {
        match store.expire_replies().await {
            Ok(0) => {}
            Ok(ended) => warn!(waits = ended, "waits for replies timed out"),
            Err(e) => {
                self.fetcher.outage().unless_outage(&e, || {
                    warn!(error = %e, "could not end the waits for replies that timed out; trying again next pass");
                })
            }
        }
        if let Err(e) = store.drain_replies().await {
            self.fetcher.outage().unless_outage(&e, || {
                warn!(error = %e, "could not carry replies to their jobs; trying again next pass");
            });
        }
    }

    /// One pass over every known and served queue. With `take_over`, also recovers the
    /// predecessors this process proves dead (done once, at start; see [`crate::identity`]). A queue that fails (a key of the
    /// wrong type, Redis away) is logged and skipped; the others are still recovered.
    pub async fn tick(&self, take_over: bool) -> Pass {
        let mut pass = Pass {
            recovered: self.release_stranded().await,
            ..Pass::default()
        };
        let mut store = crate::door::recovery(&self.client);
        let mut queues = match store.known_queues().await {
            Ok(queues) => queues,
            Err(e) => {
                self.fetcher.outage().unless_outage(&e, || {
                    warn!(error = %e, "could not read the known queues; recovering the served ones only");
                });
                Vec::new()
            }
        };
        for queue in self.fetcher.order().all() {
            if !queues.contains(&queue) {
                queues.push(queue);
            }
        }
        let take_over = self
            .predecessors
            .as_ref()
            .map(|(prefix, spared)| (prefix.as_str(), spared.as_str()))
            .filter(|_| take_over);
        // Replies: waits whose time ran out, and completions a crash left (one slot for all).
        self.replies(&mut store).await;
        for queue in &queues {
            self.recover_queue(&mut store, queue, take_over, &mut pass)
                .await;
        }
        pass
    }

    /// One queue's pass: the in-flight jobs of its dead processes go back, then the hand-offs
    /// a crash or an outage left: chain steps in its outbox, and released workflow steps.
    async fn recover_queue(
        &self,
        store: &mut PutBack<'_>,
        queue: &str,
        take_over: Option<(&str, &str)>,
        pass: &mut Pass,
    ) {
        let own = self.fetcher.process();
        let recovered = match store.recover((queue, own), FORGET_AFTER, take_over).await {
            Ok(recovered) => recovered,
            Err(e) => {
                self.fetcher.outage().unless_outage(&e, || {
                    warn!(queue = %queue, error = %e, "could not recover the queue's in-flight jobs of dead processes; trying again next pass");
                });
                return;
            }
        };
        for (process, jobs) in &recovered.processes {
            warn!(queue = %queue, process = %process, jobs, "recovered the in-flight jobs of a dead worker process");
        }
        pass.recovered += recovered.jobs();
        // Hand-offs of chain steps a crash or an outage left in the outbox.
        match store.drain_outbox(queue).await {
            Ok(0) => {}
            Ok(handoffs) => debug!(queue = %queue, handoffs, "drained the outbox"),
            Err(e) => {
                self.fetcher.outage().unless_outage(&e, || {
                    warn!(queue = %queue, error = %e, "could not drain the queue's outbox of chain hand-offs; trying again next pass");
                });
            }
        }
        // Workflow steps released (or dispatched) by a process that died before it pushed
        // them to their queues.
        if let Err(e) = store.drain_pushing(queue).await {
            self.fetcher.outage().unless_outage(&e, || {
                warn!(queue = %queue, error = %e, "could not push the released steps of the queue's workflows; trying again next pass");
            });
        }
        if let Some(expiry) = recovered.next_expiry_ms {
            let wait = Duration::from_millis(expiry.saturating_sub(recovered.now_ms));
            pass.next_expiry_in = Some(pass.next_expiry_in.map_or(wait, |w| w.min(wait)));
        }
    }

    /// Puts back this process's in-flight jobs that no processor has held on two passes in a
    /// row: their fetch ran in Redis but its reply was lost (a timeout, a Redis crash), or
    /// their outcome could not be written, so nothing here would ever settle them. One pass is
    /// not enough: a fetch whose reply is still on its way looks the same for a moment.
    async fn release_stranded(&self) -> usize {
        let mut store = crate::door::recovery(&self.client);
        let process = self.fetcher.process();
        let before = std::mem::take(&mut *self.lock_unheld());
        let mut now_unheld = HashSet::new();
        let mut released = 0;
        for queue in self.leases.queues() {
            let listed = match store.in_flight(&queue, process).await {
                Ok(listed) => listed,
                Err(e) => {
                    self.fetcher.outage().unless_outage(&e, || {
                        warn!(queue = %queue, error = %e, "could not look for stranded in-flight jobs");
                    });
                    continue;
                }
            };
            for raw in listed {
                if self.fetcher.holds(&raw) {
                    continue;
                }
                let key = (queue.clone(), raw);
                if !before.contains(&key) {
                    now_unheld.insert(key);
                    continue;
                }
                let job = Fetched {
                    queue: key.0,
                    process: process.to_owned(),
                    raw: key.1,
                    admitted: false,
                };
                match store.release(&job).await {
                    Ok(put_back) => released += usize::from(put_back),
                    Err(e) => {
                        warn!(queue = %job.queue, error = %e, "could not put back a stranded in-flight job; trying again next pass");
                        now_unheld.insert((job.queue, job.raw));
                    }
                }
            }
        }
        *self.lock_unheld() = now_unheld;
        if released > 0 {
            warn!(
                jobs = released,
                "put back in-flight jobs whose fetch reply was lost or whose outcome could not be written"
            );
        }
        released
    }

    /// At shutdown: puts every job left in this process's in-flight lists back at the head of
    /// its queue (still running after the shutdown timeout, or fetched as shutdown began), and
    /// gives up the lease on each queue emptied, in the same step. `fetches_done` says that no
    /// fetch can still land a job; if one might, the leases are kept, to expire, so the fleet
    /// recovers whatever lands. Returns whether everything was put back and every lease given up.
    pub async fn put_back_own(&self, fetches_done: bool, finished: bool) -> bool {
        let mut store = crate::door::recovery(&self.client);
        let process = self.fetcher.process();
        let (mut put_back, mut complete) = (0, fetches_done);
        for queue in self.leases.queues() {
            match store.put_back(&queue, process, fetches_done).await {
                Ok(n) => {
                    put_back += n;
                    if fetches_done {
                        self.leases.forget(&queue);
                    }
                }
                Err(e) => {
                    complete = false;
                    error!(queue = %queue, error = %e, "could not put this process's in-flight jobs back: its lease is left to expire, and another worker recovers them then");
                }
            }
        }
        if finished && complete && put_back == 0 {
            info!("worker stopped cleanly");
        } else if put_back > 0 {
            warn!(
                jobs = put_back,
                "put unfinished jobs back at the head of their queues"
            );
        }
        complete
    }

    fn lock_unheld(&self) -> std::sync::MutexGuard<'_, HashSet<(String, Vec<u8>)>> {
        // A poisoned lock only means a panic between two whole-set operations.
        self.unheld.lock().unwrap_or_else(|e| e.into_inner())
    }
}
