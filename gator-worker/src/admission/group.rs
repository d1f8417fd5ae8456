//! One controlled queue's group in a process: its jobs taken ahead, its successes not written
//! yet, the processors waiting for a job, its call tasks, and the pace that sizes the buffer.

use super::{MAX_BUFFER, MAX_CALLS, Success, Turn};
use crate::door::{Fetched, NextLook};
use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::{Notify, oneshot};

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

/// Where one processor's answer comes from.
pub(super) type Answer = oneshot::Receiver<gator_core::Result<Turn>>;

/// One processor's place in a queue's group.
pub(super) enum Joined {
    /// It wants no job (its success only was handed over).
    NoWant,
    /// A job taken ahead, at once.
    Buffered(Fetched),
    /// First in line: it makes the next call itself, then reads its answer.
    Lead(Answer),
    /// In line for a call in flight.
    Wait(Answer),
}

#[derive(Default)]
pub(super) struct Group {
    pub(super) state: Mutex<GroupState>,
    /// Notified when a call ends.
    pub(super) idle: Notify,
}

#[derive(Default)]
pub(super) struct GroupState {
    /// Jobs taken ahead (held, in flight), oldest first.
    pub(super) buffer: VecDeque<Fetched>,
    /// Successes not written yet (still held), each with its status record's tail.
    pub(super) acks: Vec<Success>,
    /// Processors waiting for a job.
    pub(super) waiters: VecDeque<oneshot::Sender<gator_core::Result<Turn>>>,
    /// Call tasks running (at most [`MAX_CALLS`]).
    pub(super) calling: usize,
    /// Successes per ms over the last whole [`PACE_WINDOW_MS`].
    pace: f64,
    /// When the current pace window began, and the successes counted in it so far.
    window: Option<(std::time::Instant, usize)>,
    /// Whether the last call was refused spares (the controls bind): no call is made for
    /// the buffer alone until a call for successes or waiters finds them allowed again.
    pub(super) spares_refused: bool,
}

impl GroupState {
    /// How many jobs to keep taken ahead now ([`HORIZON_MS`] at the recent pace).
    pub(super) fn target(&self) -> usize {
        ((self.pace * HORIZON_MS) as usize).min(MAX_BUFFER)
    }

    /// Counts the successes a call takes, for the pace.
    pub(super) fn note_pace(&mut self, successes: usize) {
        let now = std::time::Instant::now();
        let (start, counted) = self.window.get_or_insert((now, 0));
        *counted += successes;
        let ms = now.duration_since(*start).as_secs_f64() * 1000.0;
        if ms >= PACE_WINDOW_MS {
            self.pace = *counted as f64 / ms;
            self.window = Some((now, 0));
        }
    }

    /// Whether a call has anything to do: successes to write, processors waiting, or room in
    /// the buffer the controls let it fill.
    pub(super) fn has_work(&self) -> bool {
        !self.acks.is_empty()
            || !self.waiters.is_empty()
            || (!self.spares_refused && self.buffer.len() * 2 < self.target())
    }
}

impl Group {
    pub(super) fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands over `ack`, if given, and, if `want`, takes the processor's place: a job from
    /// the buffer, else a place in line, first if a call is free (counted in `calling` then).
    pub(super) fn join(&self, ack: Option<Success>, want: bool) -> Joined {
        let mut state = self.lock();
        if let Some(ack) = ack {
            state.acks.push(ack);
        }
        if !want {
            return Joined::NoWant;
        }
        if let Some(job) = state.buffer.pop_front() {
            return Joined::Buffered(job);
        }
        let (answer, answered) = oneshot::channel();
        // With a call free, this processor makes it itself, first in line for its jobs: an
        // admission reaches it with no hop through another task, so starts follow the
        // decisions (a rate limiter's spacing) as closely as they can.
        if state.calling < MAX_CALLS {
            state.calling += 1;
            state.waiters.push_front(answer);
            Joined::Lead(answered)
        } else {
            state.waiters.push_back(answer);
            Joined::Wait(answered)
        }
    }
}

impl Turn {
    /// A turn with `jobs`, decided at `now_ms`.
    pub(super) fn new(jobs: Vec<Fetched>, now_ms: u64, next: NextLook) -> Turn {
        Turn { jobs, now_ms, next }
    }
}
