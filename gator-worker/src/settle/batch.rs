//! Group commit of plain successes: the successes of one in-flight list that arrive together
//! go in one call, one `MULTI` (`store::ack::ack_and_take`), which also takes a next job for
//! each of their processors that wants one. A worker draining a
//! queue with many processors then pays one round trip per batch, not per job, and Redis one
//! `MULTI`, one `EXEC` and one `LPUSH` of the finished list per batch.
//!
//! 1. The first success of its list to arrive leads: it yields once to the scheduler, so that
//!    the processors woken with it (by the same reply) finish their jobs and join, then makes
//!    one call for itself and every success that joined (at most [`MAX_ACKS`]; any more go as
//!    the next batch, led by the first of them). The answers go back to each.
//! 2. Calls are not held back while one is on its way: a batch is what gathered during one
//!    yield, so a worker with one job running waits for nothing but that yield, and a busy
//!    one sends a few large calls instead of many small ones. (Holding the next call until
//!    the last one returned made larger batches, but a worker with ten processors then spent
//!    more time waiting than working: `gator-bench process` ran 10-20 % slower.)
//! 3. A job is taken only for a processor that holds its own free slot (never more jobs than
//!    free slots), and each job stays held until its call's answer says it was written, so
//!    recovery is as before: a process that dies with successes waiting leaves those jobs in
//!    flight, and they run again.

use super::Settler;
use crate::fetcher::{Job, Slot};
use gator_core::store::inflight::{self, Ack, Acked, Fetched, MAX_ACKS};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, oneshot};
use tracing::{error, warn};

/// The groups of one process's in-flight lists, by queue (or shard).
#[derive(Debug, Default)]
pub(super) struct Batches(Mutex<FxHashMap<String, Arc<Group>>>);

/// The successes of one in-flight list waiting for the call on its way to return.
#[derive(Debug, Default)]
pub(super) struct Group(Mutex<State>);

#[derive(Debug, Default)]
struct State {
    /// Whether a leader is letting successes gather, about to make its call.
    gathering: bool,
    waiting: Vec<Member>,
}

/// One success to write, with what its processor wants next.
#[derive(Debug)]
pub(super) struct Member {
    pub fetched: Fetched,
    /// Its status record (`Done::record`) and how long it is kept.
    pub record: String,
    pub retention: Duration,
    /// Its processor's own slot, when it wants its next job from this list.
    pub own: Option<OwnedSemaphorePermit>,
    /// A slot given back once the call is sent (see `write::sent_then`): its own, or one a
    /// sync body's thread still shares.
    pub spare: Option<Result<OwnedSemaphorePermit, Slot>>,
    /// Where its answer goes; `None` for the leader's own success.
    reply: Option<oneshot::Sender<Reply>>,
}

/// What a waiting success gets: its answer, or the lead of the next call.
#[derive(Debug)]
enum Reply {
    Answer(Answer),
    Lead(Vec<Member>),
}

/// What became of one success: the job back, and whether it was written (with the next job
/// taken for its processor, if any), or the error that kept the call from Redis.
#[derive(Debug)]
pub(super) struct Answer {
    pub fetched: Fetched,
    pub written: Result<Option<Job>, Arc<gator_core::Error>>,
}

impl Member {
    /// `fetched`'s success, recording `record` for `retention`.
    pub fn new(fetched: Fetched, record: String, retention: Duration) -> Member {
        Member {
            fetched,
            record,
            retention,
            own: None,
            spare: None,
            reply: None,
        }
    }
}

impl Batches {
    fn group(&self, queue: &str) -> Arc<Group> {
        let mut groups = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(group) = groups.get(queue) {
            return group.clone();
        }
        groups.entry(queue.to_owned()).or_default().clone()
    }
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ends the gathering `leader` started: its batch is `leader` and the first successes that
    /// joined (at most [`MAX_ACKS`] in all). Any beyond go as further batches of at most
    /// [`MAX_ACKS`], each led by its first.
    fn gathered(&self, leader: Member) -> Vec<Member> {
        let mut state = self.lock();
        state.gathering = false;
        let mut joined = std::mem::take(&mut state.waiting).into_iter();
        drop(state);
        let mut batch = vec![leader];
        batch.extend(joined.by_ref().take(MAX_ACKS - 1));
        let mut rest: Vec<Member> = joined.collect();
        while !rest.is_empty() {
            let after = rest.split_off(rest.len().min(MAX_ACKS));
            hand_lead(rest);
            rest = after;
        }
        batch
    }
}

/// Hands `batch` to its first member that is still there, to make its call.
fn hand_lead(mut batch: Vec<Member>) {
    while !batch.is_empty() {
        let Some(next) = batch[0].reply.take() else {
            unreachable!("every waiting success has a reply");
        };
        match next.send(Reply::Lead(batch)) {
            Ok(()) => return,
            // Its processor is gone: the next one leads.
            Err(Reply::Lead(mut back)) => {
                back.remove(0);
                batch = back;
            }
            Err(Reply::Answer(_)) => unreachable!("a lead was sent"),
        }
    }
}

impl Settler {
    /// Writes `member`'s success with the others of its list (see the module docs); `None` only
    /// if the call carrying it was lost with its leader (the job then stays in flight, held,
    /// and is put back when this process stops).
    pub(super) async fn commit(&self, mut member: Member) -> Option<Answer> {
        let group = self.batches.group(&member.fetched.queue);
        let joined = {
            let mut state = group.lock();
            if state.gathering {
                let (tx, rx) = oneshot::channel();
                member.reply = Some(tx);
                state.waiting.push(member);
                Err(rx)
            } else {
                state.gathering = true;
                Ok(member)
            }
        };
        let batch = match joined {
            Ok(member) => {
                // Lets the processors woken with this one finish their jobs and join.
                tokio::task::yield_now().await;
                group.gathered(member)
            }
            Err(rx) => match rx.await {
                Ok(Reply::Answer(answer)) => return Some(answer),
                Ok(Reply::Lead(batch)) => batch,
                Err(_) => {
                    error!(
                        "a success's batch was lost with the processor that carried it: the job stays in flight until this process stops"
                    );
                    return None;
                }
            },
        };
        let mut own = None;
        for (reply, answer) in self.call(batch).await {
            match reply {
                // A processor gone meanwhile cannot take its answer: nothing to do.
                Some(reply) => drop(reply.send(Reply::Answer(answer))),
                None => own = Some(answer),
            }
        }
        own
    }

    /// One `MULTI` for `batch`, each success's answer beside where it goes.
    async fn call(&self, mut batch: Vec<Member>) -> Vec<(Option<oneshot::Sender<Reply>>, Answer)> {
        let keys = self.client.keys();
        let mut conn = self.client.connection();
        let want = batch.iter().filter(|m| m.own.is_some()).count();
        let spares: Vec<_> = batch.iter_mut().filter_map(|m| m.spare.take()).collect();
        let acks: Vec<Ack<'_>> = batch
            .iter()
            .map(|m| Ack {
                job: &m.fetched,
                record: &m.record,
                retention: m.retention,
            })
            .collect();
        let call = inflight::ack_and_take(&mut conn, keys, &acks, want);
        let acked = super::write::sent_then(call, move || drop(spares)).await;
        drop(acks);
        match acked {
            Ok(acked) => self.written(batch, acked).await,
            Err(e) => {
                let e = Arc::new(e);
                let answer = |m: Member| {
                    let written = Err(e.clone());
                    let answer = Answer {
                        fetched: m.fetched,
                        written,
                    };
                    (m.reply, answer)
                };
                batch.into_iter().map(answer).collect()
            }
        }
    }

    /// Hands the jobs a call took to the processors that wanted one, in order, and forgets
    /// every job it wrote.
    async fn written(
        &self,
        batch: Vec<Member>,
        acked: Acked,
    ) -> Vec<(Option<oneshot::Sender<Reply>>, Answer)> {
        if acked.removed.iter().any(|removed| !removed) {
            let queue = &batch[0].fetched.queue;
            warn!(queue = %queue, "job was no longer in flight: an earlier write whose reply was lost recorded its outcome, or it was recovered and will run again");
            // Presumed dead and recovered: index the list the jobs just taken sit in.
            if let Err(e) = self.fetcher.leases().acquire(queue).await {
                warn!(queue = %queue, error = %e, "could not renew the lease after a recovery");
            }
        }
        self.fetcher.hold(&acked.taken);
        let mut taken = acked.taken.into_iter();
        batch
            .into_iter()
            .map(|m| {
                self.fetcher.settled(&m.fetched);
                let next = m.own.and_then(|own| Some(Job::new(taken.next()?, own)));
                let answer = Answer {
                    fetched: m.fetched,
                    written: Ok(next),
                };
                (m.reply, answer)
            })
            .collect()
    }
}
