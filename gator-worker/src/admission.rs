//! Admission from controlled queues (see `gator_core::flow`): asynchronous acks and a small
//! buffer of jobs taken ahead, per queue, so that one `admit.lua` call serves many jobs.
//!
//! Redis's cost of an admission is mostly per call (about twenty commands of fixed work inside
//! the script), so calls carry as many jobs as they can without changing a decision:
//!
//! 1. A processor whose job succeeded hands its success to the queue's group and moves on: the
//!    success is written by the next call, and the job stays held (recovery leaves it alone)
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

use crate::held::Held;
use crate::leases::Leases;
use gator_core::Client;
use gator_core::store::admit::{self, AdmitRequest, Admitted, MAX_ACKS, NextLook, WindowInterval};
use gator_core::store::inflight::{self, Fetched};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};
use tracing::warn;

/// The most jobs a process keeps taken ahead per controlled queue.
pub const MAX_BUFFER: usize = 64;

/// Call tasks per queue and process at once: while Redis runs one call, the next gathers its
/// requests and is sent as soon as it is ready.
pub const MAX_CALLS: usize = 2;

/// How far ahead a process takes jobs: as many as its processors finish in this long, at the
/// pace measured over the last [`PACE_WINDOW_MS`]. A stream of short jobs fills calls of dozens
/// of jobs; jobs that take long are not taken ahead (a processor waits for its call, as without
/// a buffer), and no job waits in a buffer much longer than this.
const HORIZON_MS: f64 = 2.0;

/// The span over which the pace is counted. Successes come in bursts (several processors often
/// finish within a few microseconds of each other); a pace taken between two calls would read
/// such a burst as thousands of jobs a second and take ahead jobs that then wait in the buffer,
/// holding their units, until one of the busy processors is free.
const PACE_WINDOW_MS: f64 = 20.0;

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
/// ([`gator_core::store::status::Done::tail`]: attempts and result).
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

#[derive(Default)]
struct Group {
    state: Mutex<GroupState>,
    /// Notified when a call ends.
    idle: Notify,
}

#[derive(Default)]
struct GroupState {
    /// Jobs taken ahead (held, in flight), oldest first.
    buffer: VecDeque<Fetched>,
    /// Successes not written yet (still held), each with its status record's tail.
    acks: Vec<Success>,
    /// Processors waiting for a job.
    waiters: VecDeque<oneshot::Sender<gator_core::Result<Turn>>>,
    /// Call tasks running (at most [`MAX_CALLS`]).
    calling: usize,
    /// Successes per ms over the last whole [`PACE_WINDOW_MS`].
    pace: f64,
    /// When the current pace window began, and the successes counted in it so far.
    window: Option<(std::time::Instant, usize)>,
    /// Whether the last call was refused spares (the controls bind): no call is made for
    /// the buffer alone until a call for successes or waiters finds them allowed again.
    spares_refused: bool,
}

impl GroupState {
    /// How many jobs to keep taken ahead now ([`HORIZON_MS`] at the recent pace).
    fn target(&self) -> usize {
        ((self.pace * HORIZON_MS) as usize).min(MAX_BUFFER)
    }

    /// Counts the successes a call takes, for the pace.
    fn note_pace(&mut self, successes: usize) {
        let now = std::time::Instant::now();
        let (start, counted) = self.window.get_or_insert((now, 0));
        *counted += successes;
        let ms = now.duration_since(*start).as_secs_f64() * 1000.0;
        if ms >= PACE_WINDOW_MS {
            self.pace = *counted as f64 / ms;
            self.window = Some((now, 0));
        }
    }
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
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
        let waiting = {
            let mut state = group.lock();
            if let Some(ack) = ack {
                state.acks.push(ack);
            }
            if !want {
                None
            } else if let Some(job) = state.buffer.pop_front() {
                drop(state);
                self.kick(queue, &group);
                return Ok(Turn {
                    jobs: vec![job],
                    now_ms: 0,
                    next: NextLook::Now,
                });
            } else {
                let (answer, answered) = oneshot::channel();
                // With a call free, this processor makes it itself, first in line for its
                // jobs: an admission reaches it with no hop through another task, so starts
                // follow the decisions (a rate limiter's spacing) as closely as they can.
                let lead = state.calling < MAX_CALLS;
                if lead {
                    state.calling += 1;
                    state.waiters.push_front(answer);
                } else {
                    state.waiters.push_back(answer);
                }
                Some((answered, lead))
            }
        };
        match waiting {
            None => {
                self.kick(queue, &group);
                Ok(Turn {
                    jobs: Vec::new(),
                    now_ms: 0,
                    next: NextLook::Now,
                })
            }
            Some((answered, true)) => {
                self.drive(queue, &group, Drive::Once).await;
                // What gathered meanwhile goes with the queue's call task.
                self.kick(queue, &group);
                // Ready at once, unless another call took this request first.
                answered.await.unwrap_or_else(|_| Err(abandoned()))
            }
            Some((answered, false)) => {
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
            if state.calling >= MAX_CALLS || !self.has_work(&state) {
                return;
            }
            state.calling += 1;
        }
        let admission = self.clone();
        let (queue, group) = (queue.to_owned(), group.clone());
        tokio::spawn(async move { admission.drive(&queue, &group, Drive::WhileWork).await });
    }

    fn has_work(&self, state: &GroupState) -> bool {
        !state.acks.is_empty()
            || !state.waiters.is_empty()
            || (!state.spares_refused && state.buffer.len() * 2 < state.target())
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
                if !self.has_work(&state) || (drive == Drive::Once && calls == 1) {
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

    /// One call: writes `acks`, admits `want` jobs and up to `spare` more, and hands them out
    /// (on a paused queue, the buffer goes back). An error if the call failed: the successes it
    /// did not write wait for the next.
    async fn call(
        &self,
        queue: &str,
        group: &Group,
        acks: Vec<Success>,
        waiters: Vec<oneshot::Sender<gator_core::Result<Turn>>>,
        spare: usize,
    ) -> gator_core::Result<()> {
        let ack_refs: Vec<(&Fetched, &str)> = acks
            .iter()
            .map(|(job, tail)| (job, tail.as_str()))
            .collect();
        let want = waiters.len();
        let (acked, result) = self.admit_all(queue, &ack_refs, want, spare).await;
        // Successes the call wrote (or found gone): no longer this process's to hold.
        for ((job, _), acked) in acks.iter().zip(acked.iter()) {
            if !acked {
                warn!(queue = %queue, "job was no longer in flight: an earlier write whose reply was lost recorded its outcome, or it was recovered and will run again");
            }
            self.held.settled(job);
        }
        let buffered = self.hand_out(group, acks, &acked, result, waiters, spare)?;
        if !buffered.is_empty() {
            self.put_back(queue, buffered).await;
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
        waiters: Vec<oneshot::Sender<gator_core::Result<Turn>>>,
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
        let jobs = admitted.jobs.into_iter();
        state.spares_refused = jobs.len() < waiters.len() + spare;
        // This call's waiters first, then any that came since, then the buffer.
        let mut waiters: VecDeque<_> = waiters.into();
        for job in jobs {
            match waiters.pop_front().or_else(|| state.waiters.pop_front()) {
                Some(waiter) => {
                    let turn = Turn {
                        jobs: vec![job],
                        now_ms: admitted.now_ms,
                        next: admitted.next,
                    };
                    if let Err(Ok(turn)) = waiter.send(Ok(turn)) {
                        // Its processor is gone: the job is kept for the next one.
                        state.buffer.extend(turn.jobs);
                    }
                }
                None => state.buffer.push_back(job),
            }
        }
        // No job for the rest of this call's waiters: they look again when `next` says.
        for waiter in waiters {
            let _ = waiter.send(Ok(Turn {
                jobs: Vec::new(),
                now_ms: admitted.now_ms,
                next: admitted.next,
            }));
        }
        if admitted.paused {
            return Ok(state.buffer.drain(..).collect());
        }
        Ok(Vec::new())
    }

    /// A paused queue: the jobs taken ahead go back first in line (their units released).
    async fn put_back(&self, queue: &str, jobs: Vec<Fetched>) {
        let mut conn = self.client.connection();
        for job in jobs {
            if let Err(e) = inflight::release(&mut conn, self.client.keys(), &job).await {
                warn!(queue = %queue, error = %e, "could not put back a job taken ahead of a pause; recovery puts it back");
            }
            self.held.settled(&job);
        }
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
        let keys = self.client.keys();
        let mut conn = self.client.connection();
        let mut acked = Vec::new();
        let mut acks = acks;
        let (mut retried, mut shared) = (false, None);
        let result = loop {
            if want + spare > 0
                && !self.leases.valid_for(queue, Duration::ZERO)
                && let Err(e) = self.leases.acquire(queue).await
            {
                break Err(e);
            }
            let window = self.lock_windows().get(queue).cloned();
            let shared_start = shared.take();
            let request = AdmitRequest {
                queue,
                process: &self.process,
                max: want,
                spare,
                window: window.as_ref(),
                acks,
                retention: self.retention,
                shared: shared_start.as_ref(),
            };
            let admitted = match admit::admit(&mut conn, keys, &request).await {
                Ok(admitted) => admitted,
                Err(e) => break Err(e),
            };
            if !acks.is_empty() {
                acked = admitted.acked.clone();
                acks = &[];
            }
            if let Some((name, cost)) = &admitted.needs_shared {
                // A shared limiter lives on its own slot: take its start there, then admit.
                match admit::take_shared(&mut conn, keys, name, *cost).await {
                    Ok(start) => shared = Some(start),
                    Err(e) => break Err(e),
                }
                continue;
            }
            if let Some(windows) = &admitted.windows {
                // The queue has time windows, and ours were missing or stale.
                let interval = WindowInterval::around(windows, admitted.now_ms);
                self.lock_windows().insert(queue.to_owned(), interval);
                continue;
            }
            if admitted.no_lease && !retried {
                if let Err(e) = self.leases.acquire(queue).await {
                    break Err(e);
                }
                retried = true;
                continue;
            }
            // A call that only parked part of a backlog found nothing yet: go on at once.
            if want > 0 && admitted.jobs.is_empty() && admitted.next == NextLook::Now {
                continue;
            }
            break Ok(admitted);
        };
        (acked, result)
    }

    fn lock_windows(&self) -> MutexGuard<'_, HashMap<String, WindowInterval>> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
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
