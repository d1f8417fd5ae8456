//! Step 1 of an idle processor's fetch (see [`super`]): a job for its own slot, from each
//! queue in its fetch's order until one has one, in one call with the other idle processors
//! that reach the same queue at the same moment.

use super::{Fetcher, Found, Job, Start};
use crate::door::{Batch, Fetched, LEASED_TAKE, MAX_BATCH};
use crate::gather::Joined;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tracing::warn;

impl Fetcher {
    /// Step 1: a job for this processor's own slot, on each queue in this fetch's order
    /// (starting where `start` says) until one has a job.
    ///
    /// One job per processor, from its own draw: taking jobs for other idle processors from
    /// this processor's queue would make their jobs follow this draw instead of their own, and
    /// tilt the weights toward whichever queue they are on. Processors whose draws meet on one
    /// queue share one call ([`Fetcher::fetch_one`]); a worker draining a queue takes its next
    /// job with each success anyway ([`crate::settle`]).
    pub(super) async fn fetch_pass(
        &self,
        slot: OwnedSemaphorePermit,
        start: Start,
    ) -> gator_core::Result<Found> {
        let queues = match start {
            Start::Draw => self.order.next_order(),
            Start::With(first) => self.order.order_starting_with(&first),
            Start::After(tried) => {
                let mut queues = self.order.order_starting_with(&tried);
                // Not sharded (see `fetches_beside`): its one list comes first.
                queues.remove(0);
                queues
            }
        };
        let (mut failed, mut failures) = (None, 0);
        let mut slot = slot;
        for queue in &queues {
            // Read before the fetch is sent (see `Passing::passed_before`).
            let seen = self.order.passing().generation();
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
            match Job::first_of(jobs, slot, seen) {
                Ok(job) => return Ok(Found::Job(job)),
                Err(unused) => slot = unused,
            }
        }
        if let Some(e) = failed.filter(|_| failures == queues.len()) {
            return Err(e);
        }
        Ok(Found::Nothing(slot))
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
    /// taking the lease first if this process holds none; for a few jobs under a lease that
    /// surely holds for half its length more, plain `LMOVE`s instead (see
    /// the `Fetch` handle's `fetch_leased`). The jobs come back held.
    async fn fetch_from(&self, queue: &str, want: usize) -> gator_core::Result<Vec<Fetched>> {
        if self.order.is_controlled(queue) {
            return Ok(self.admission.admit(queue, None, want > 0).await?.jobs);
        }
        if !self.leases.valid_for(queue, Duration::ZERO) {
            self.leases.acquire(queue).await?;
        }
        let mut fetch = crate::door::fetch(&self.client);
        let mut retried = false;
        let passed = self.order.passing().names(queue);
        // A few jobs under a lease that surely holds for half its length more: plain `LMOVE`s,
        // no script.
        let leased = want <= LEASED_TAKE && self.leases.takes_plainly(queue);
        loop {
            let process = self.process.as_str();
            let batch = match &passed {
                None if leased && !retried => fetch.fetch_leased(queue, process, want).await?,
                None => fetch.fetch_batch(queue, process, want).await?,
                // Jobs this worker does not run stay in the queue for the workers that do.
                Some(names) => fetch.fetch_except((queue, process), want, names).await?,
            };
            match batch {
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
}
