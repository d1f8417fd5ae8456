//! One `admit.lua` call of a queue's group: it carries the successes that gathered, asks for a
//! job per waiting processor and for spares, then hands the jobs out (waiters first, then the
//! buffer). The successes' bookkeeping and a paused queue's put-back are settling's
//! ([`crate::settle`]).

use super::group::{Group, GroupState};
use super::{Admission, Success, Turn, share};
use crate::door::{AdmitRequest, Admitted, Fetch, Fetched, NextLook, SharedStart, WindowInterval};
use std::collections::{HashMap, VecDeque};
use std::sync::MutexGuard;
use std::time::Duration;
use tokio::sync::oneshot;

/// A processor waiting for its turn.
type Waiter = oneshot::Sender<gator_core::Result<Turn>>;

/// What to do after one `admit.lua` answer.
enum Then {
    /// Call again at once (with a shared limiter's start, if one was taken).
    Again(Option<SharedStart>),
    /// The answer to hand out.
    Answer,
}

impl Admission {
    /// One call: writes `acks`, admits `want` jobs and up to `spare` more, and hands them out
    /// (on a paused queue, the buffer goes back). An error if the call failed: the successes it
    /// did not write wait for the next.
    pub(super) async fn call(
        &self,
        queue: &str,
        group: &Group,
        acks: Vec<Success>,
        waiters: Vec<Waiter>,
        spare: usize,
    ) -> gator_core::Result<()> {
        let ack_refs: Vec<(&Fetched, &str)> = acks
            .iter()
            .map(|(job, tail)| (job, tail.as_str()))
            .collect();
        let want = waiters.len();
        let (acked, result) = self.admit_all(queue, &ack_refs, want, spare).await;
        crate::settle::ack::admitted_written(queue, &acks, &acked, (&self.held, &self.leases));
        let buffered = self.hand_out(group, acks, &acked, result, waiters, spare)?;
        if !buffered.is_empty() {
            crate::settle::put_back(&self.client, &self.held, queue, buffered).await;
        }
        Ok(())
    }

    /// Hands out what a call found: the jobs to the waiting processors first, the rest to the
    /// buffer. Returns the buffer to put back if the queue is paused.
    fn hand_out(
        &self,
        group: &Group,
        acks: Vec<Success>,
        acked: &[bool],
        result: gator_core::Result<Admitted>,
        waiters: Vec<Waiter>,
        spare: usize,
    ) -> gator_core::Result<Vec<Fetched>> {
        let mut state = group.lock();
        if acked.len() < acks.len() {
            // Not written: they go with the next call.
            state.acks.extend(acks.into_iter().skip(acked.len()));
        }
        let admitted = match result {
            Ok(admitted) => admitted,
            Err(e) => {
                for waiter in waiters {
                    let _ = waiter.send(Err(share(&e)));
                }
                return Err(e);
            }
        };
        self.held.hold(&admitted.jobs);
        state.spares_refused = admitted.jobs.len() < waiters.len() + spare;
        let (now_ms, next, paused) = (admitted.now_ms, admitted.next, admitted.paused);
        let waiters = give_out(&mut state, admitted.jobs, waiters.into(), now_ms, next);
        // No job for the rest of this call's waiters: they look again when `next` says.
        for waiter in waiters {
            let _ = waiter.send(Ok(Turn::new(Vec::new(), now_ms, next)));
        }
        if paused {
            return Ok(state.buffer.drain(..).collect());
        }
        Ok(Vec::new())
    }

    /// `admit.lua` on `queue` until it gives an answer to hand out: takes the lease first if
    /// this process holds none (units are leased with it), a shared limiter's start when a job
    /// needs one, and the queue's window interval when it is missing or stale. The successes
    /// go with the first call only. Returns, beside the result, whether each success was
    /// settled (empty if no call got through).
    async fn admit_all(
        &self,
        queue: &str,
        acks: &[(&Fetched, &str)],
        want: usize,
        spare: usize,
    ) -> (Vec<bool>, gator_core::Result<Admitted>) {
        let mut fetch = crate::door::fetch(&self.client);
        let (mut acks, mut acked) = (acks, Vec::new());
        let (mut retried, mut shared) = (false, None);
        let result = loop {
            let request = (acks, want, spare, shared.take());
            let admitted = match self.admit_once(&mut fetch, queue, request).await {
                Ok(admitted) => admitted,
                Err(e) => break Err(e),
            };
            if !acks.is_empty() {
                acked = admitted.acked.clone();
                acks = &[];
            }
            match self
                .then(&mut fetch, queue, &admitted, want, &mut retried)
                .await
            {
                Ok(Then::Again(start)) => shared = start,
                Ok(Then::Answer) => break Ok(admitted),
                Err(e) => break Err(e),
            }
        };
        (acked, result)
    }

    /// One `admit.lua` call: `(acks, want, spare, shared start)`, taking the lease first when
    /// it asks for jobs and this process holds none.
    async fn admit_once(
        &self,
        fetch: &mut Fetch<'_>,
        queue: &str,
        (acks, want, spare, shared): (&[(&Fetched, &str)], usize, usize, Option<SharedStart>),
    ) -> gator_core::Result<Admitted> {
        if want + spare > 0 && !self.leases.valid_for(queue, Duration::ZERO) {
            self.leases.acquire(queue).await?;
        }
        let window = self.lock_windows().get(queue).cloned();
        let request = AdmitRequest {
            queue,
            process: &self.process,
            max: want,
            spare,
            window: window.as_ref(),
            acks,
            retention: self.retention,
            shared: shared.as_ref(),
        };
        fetch.admit(&request).await
    }

    /// What an answer asks for before it can be handed out: a shared limiter's start (on its
    /// own slot), the queue's window interval, the lease again (once), or simply another call.
    async fn then(
        &self,
        fetch: &mut Fetch<'_>,
        queue: &str,
        admitted: &Admitted,
        want: usize,
        retried: &mut bool,
    ) -> gator_core::Result<Then> {
        if let Some((name, cost)) = &admitted.needs_shared {
            // A shared limiter lives on its own slot: take its start there, then admit.
            let start = fetch.take_shared(name, *cost).await?;
            return Ok(Then::Again(Some(start)));
        }
        if let Some(windows) = &admitted.windows {
            // The queue has time windows, and ours were missing or stale.
            let interval = WindowInterval::around(windows, admitted.now_ms);
            self.lock_windows().insert(queue.to_owned(), interval);
            return Ok(Then::Again(None));
        }
        if admitted.no_lease && !*retried {
            self.leases.acquire(queue).await?;
            *retried = true;
            return Ok(Then::Again(None));
        }
        // A call that only parked part of a backlog found nothing yet: go on at once.
        if want > 0 && admitted.jobs.is_empty() && admitted.next == NextLook::Now {
            return Ok(Then::Again(None));
        }
        Ok(Then::Answer)
    }

    fn lock_windows(&self) -> MutexGuard<'_, HashMap<String, WindowInterval>> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Gives `jobs` out: this call's waiters first, then any that came since, then the buffer.
/// Returns this call's waiters that got none.
fn give_out(
    state: &mut GroupState,
    jobs: Vec<Fetched>,
    mut waiters: VecDeque<Waiter>,
    now_ms: u64,
    next: NextLook,
) -> VecDeque<Waiter> {
    for job in jobs {
        match waiters.pop_front().or_else(|| state.waiters.pop_front()) {
            Some(waiter) => {
                if let Err(Ok(turn)) = waiter.send(Ok(Turn::new(vec![job], now_ms, next))) {
                    // Its processor is gone: the job is kept for the next one.
                    state.buffer.extend(turn.jobs);
                }
            }
            None => state.buffer.push_back(job),
        }
    }
    waiters
}
