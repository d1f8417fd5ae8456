//! Admission from controlled queues (see `gator_core::flow`): asynchronous acks and a small
//! buffer of jobs taken ahead, per queue, so that one `admit.lua` call serves many jobs.
//!
//! Redis's cost of an admission is mostly per call (about twenty commands of fixed work inside
//! the script), so calls carry as many jobs as they can without changing a decision:
//!
//! 1. A processor whose job succeeded hands its success to the queue's group and moves on
//!    ([`crate::settle`]): the success is written by the next call, and the job stays held (recovery leaves it alone)
//!    until it is. A crash before then runs it again: at least once, as always.
//! 2. A processor that wants a job takes one from the group's buffer at once. Else, with a call
//!    free, it makes the next call itself and is first in line for its jobs: an admission then
//!    reaches it with no hop through another task, so starts follow the decisions (a rate
//!    limiter's spacing) as closely as they can. Else it waits for a call in flight.
//! 3. At most [`MAX_CALLS`] calls per queue: a processor's own, or the queue's call task, which
//!    goes on while there are successes to write, processors waiting, or room in the buffer
//!    the controls let it fill. Each call
//!    carries every success that gathered, asks for a job per waiting processor, and for
//!    *spares* up to the buffer's size.
//! 4. `admit.lua` starts spares only where starting a job early changes no decision: no time
//!    windows, no rate limiter closer than a millisecond per spare, and under a concurrency
//!    limit only while at most half the limit (and half the key's share) is in use. Elsewhere a
//!    call admits what waiting processors ask for, one job each, as before.
//! 5. A paused answer puts the buffer back first in line; shutdown writes the pending successes
//!    ([`Admission::flush`]) before this process's in-flight jobs are put back.
//!
//! `group.rs` holds a queue's state; `call.rs` makes one call and hands its jobs out.

mod call;
mod group;

use crate::door::{Fetched, MAX_ADMIT_ACKS as MAX_ACKS, NextLook, WindowInterval};
use crate::held::Held;
use crate::leases::Leases;
use gator_core::Client;
use group::{Group, Joined};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tracing::warn;

/// The most jobs a process keeps taken ahead per controlled queue.
pub const MAX_BUFFER: usize = 64;

/// Call tasks per queue and process at once: while Redis runs one call, the next gathers its
/// requests and is sent as soon as it is ready.
pub const MAX_CALLS: usize = 2;

/// The admissions of one worker process, one group per controlled queue.
pub struct Admission {
    client: Client,
    leases: Arc<Leases>,
    held: Arc<Held>,
    process: String,
    /// How long successes' status records (and results) are kept.
    retention: Duration,
    groups: Mutex<HashMap<String, Arc<Group>>>,
    /// Each controlled queue's time-window interval, as last computed for `admit.lua`.
    windows: Mutex<HashMap<String, WindowInterval>>,
}

/// A success handed to a queue's group: the job, and the tail of its status record
/// (`Done::tail`: attempts and result).
pub type Success = (Fetched, String);

/// What one processor's request got.
#[derive(Debug)]
pub struct Turn {
    /// Its job, if one could start, held for it.
    pub jobs: Vec<Fetched>,
    /// Redis time of the last decision, ms.
    pub now_ms: u64,
    /// When to look again, if it got no job.
    pub next: NextLook,
}

impl Admission {
    /// The admissions of process `process`, which holds the jobs it admits in `held`.
    pub fn new(
        client: Client,
        leases: Arc<Leases>,
        held: Arc<Held>,
        process: String,
        retention: Duration,
    ) -> Admission {
        Admission {
            client,
            leases,
            held,
            process,
            retention,
            groups: Mutex::new(HashMap::new()),
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Hands over `ack` (a success of this process on controlled `queue`), if given, to be
    /// written by the next call, and, if `want`, a job of `queue` for the caller: from the
    /// buffer at once, else from the next call.
    pub async fn admit(
        self: &Arc<Self>,
        queue: &str,
        ack: Option<Success>,
        want: bool,
    ) -> gator_core::Result<Turn> {
        let group = self.group(queue);
        match group.join(ack, want) {
            Joined::NoWant => {
                self.kick(queue, &group);
                Ok(Turn::new(Vec::new(), 0, NextLook::Now))
            }
            Joined::Buffered(job) => {
                self.kick(queue, &group);
                Ok(Turn::new(vec![job], 0, NextLook::Now))
            }
            Joined::Lead(answered) => {
                self.drive(queue, &group, Drive::Once).await;
                // What gathered meanwhile goes with the queue's call task.
                self.kick(queue, &group);
                // Ready at once, unless another call took this request first.
                answered.await.unwrap_or_else(|_| Err(abandoned()))
            }
            Joined::Wait(answered) => {
                self.kick(queue, &group);
                answered.await.unwrap_or_else(|_| Err(abandoned()))
            }
        }
    }

    /// Writes every pending success of every queue, and lets the calls in flight end (for
    /// shutdown, before this process's in-flight jobs are put back). Gives up at `deadline`.
    pub async fn flush(self: &Arc<Self>, deadline: tokio::time::Instant) {
        let groups: Vec<(String, Arc<Group>)> = self
            .lock_groups()
            .iter()
            .map(|(q, g)| (q.clone(), g.clone()))
            .collect();
        for (queue, group) in groups {
            loop {
                let idle = group.idle.notified();
                tokio::pin!(idle);
                idle.as_mut().enable();
                {
                    let state = group.lock();
                    if state.acks.is_empty() && state.calling == 0 {
                        break;
                    }
                }
                self.kick(&queue, &group);
                if tokio::time::timeout_at(deadline, idle).await.is_err() {
                    warn!(queue = %queue, "shutdown: successes of jobs under flow control not written in time; they run again");
                    return;
                }
            }
        }
    }

    fn group(&self, queue: &str) -> Arc<Group> {
        self.lock_groups()
            .entry(queue.to_owned())
            .or_default()
            .clone()
    }

    fn lock_groups(&self) -> MutexGuard<'_, HashMap<String, Arc<Group>>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts the queue's call task if none runs and there is work for one.
    fn kick(self: &Arc<Self>, queue: &str, group: &Arc<Group>) {
        {
            let mut state = group.lock();
            if state.calling >= MAX_CALLS || !state.has_work() {
                return;
            }
            state.calling += 1;
        }
        let admission = self.clone();
        let (queue, group) = (queue.to_owned(), group.clone());
        tokio::spawn(async move { admission.drive(&queue, &group, Drive::WhileWork).await });
    }

    /// Calls for the queue, counted in `calling` already: one call after another while there is
    /// work for one (the queue's call task), or one call (a processor leading its own). It ends
    /// under the lock a request takes to join, so a request is either served by this call or
    /// starts the next one.
    async fn drive(&self, queue: &str, group: &Group, drive: Drive) {
        let mut done = Done {
            group,
            ended: false,
        };
        let mut calls = 0;
        loop {
            let (acks, waiters, spare) = {
                let mut state = group.lock();
                if !state.has_work() || (drive == Drive::Once && calls == 1) {
                    state.calling -= 1;
                    drop(state);
                    done.end();
                    return;
                }
                let n = state.acks.len().min(MAX_ACKS);
                let acks: Vec<Success> = state.acks.drain(..n).collect();
                state.note_pace(acks.len());
                let waiters: Vec<_> = state.waiters.drain(..).collect();
                let spare = state
                    .target()
                    .saturating_sub(state.buffer.len() + waiters.len());
                (acks, waiters, spare)
            };
            calls += 1;
            if let Err(e) = self.call(queue, group, acks, waiters, spare).await {
                // Every waiter left is told (each tries again after its backoff, which calls
                // again); the successes wait for that call.
                let mut state = group.lock();
                for waiter in state.waiters.drain(..) {
                    let _ = waiter.send(Err(share(&e)));
                }
                state.calling -= 1;
                drop(state);
                done.end();
                return;
            }
        }
    }
}

/// How long [`Admission::drive`] goes on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drive {
    /// One call: a processor that wants a job makes it.
    Once,
    /// While there is work for a call: the queue's call task.
    WhileWork,
}

/// Marks a queue's call task gone. A task that ends by itself does so under the group's lock
/// ([`Done::end`]); one cancelled or panicking mid-call frees the group here, and tells the
/// processors still waiting.
struct Done<'a> {
    group: &'a Group,
    ended: bool,
}

impl Done<'_> {
    fn end(&mut self) {
        self.ended = true;
        self.group.idle.notify_waiters();
    }
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let mut state = self.group.lock();
        state.calling -= 1;
        for waiter in state.waiters.drain(..) {
            let _ = waiter.send(Err(abandoned()));
        }
        drop(state);
        self.group.idle.notify_waiters();
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("process", &self.process)
            .finish_non_exhaustive()
    }
}

/// The error of a call, for each waiter it served.
fn share(error: &gator_core::Error) -> gator_core::Error {
    match error {
        gator_core::Error::Redis(e) => gator_core::Error::Redis(e.clone()),
        other => redis_io(other.to_string()),
    }
}

/// The answer of a request whose call task ended without one.
fn abandoned() -> gator_core::Error {
    redis_io("the admit call carrying this request was abandoned".to_owned())
}

fn redis_io(message: String) -> gator_core::Error {
    gator_core::Error::Redis(redis::RedisError::from(std::io::Error::other(message)))
}
