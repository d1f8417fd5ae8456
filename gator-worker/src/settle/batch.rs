//! Group commit of plain successes: the successes of one in-flight list that arrive together
//! go in one call ([`crate::gather`]), one `MULTI` (`Settle::ack_and_take`), which also
//! takes a next job for each of their processors that wants one. A worker draining a queue
//! with many processors then pays one round trip per batch, not per job, and Redis one
//! `MULTI`, one `EXEC` and one `LPUSH` of the finished list per batch.
//!
//! A job is taken only for a processor that holds its own free slot (never more jobs than
//! free slots), and each job stays held until its call's answer says it was written, so
//! recovery is as before: a process that dies with successes gathering leaves those jobs in
//! flight, and they run again.

use super::Settler;
use super::{Ack, Acked, Done, Fetched, MAX_ACKS};
use crate::fetcher::{Job, Slot};
use crate::gather::{Gathers, Joined};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tracing::{error, warn};

/// The successes of one process gathering for a call, per in-flight list.
pub(super) type Batches = Gathers<Member, Answer>;

/// One success to write, with what its processor wants next.
#[derive(Debug)]
pub(super) struct Member {
    pub fetched: Fetched,
    /// Its status record (`Done::record`) and how long it is kept.
    pub record: String,
    pub retention: Duration,
    /// Whether its key may hold a record to delete (`Done::keyed`).
    pub keyed: bool,
    /// Its processor's own slot, when it wants its next job from this list.
    pub own: Option<OwnedSemaphorePermit>,
    /// A slot given back once the call is sent (see `write::sent_then`): its own, or one a
    /// sync body's thread still shares.
    pub spare: Option<Result<OwnedSemaphorePermit, Slot>>,
}

/// What became of one success: the job back, and whether it was written (with the next job
/// taken for its processor, if any), or the error that kept the call from Redis.
#[derive(Debug)]
pub(super) struct Answer {
    pub fetched: Fetched,
    pub written: Result<Option<Job>, Arc<gator_core::Error>>,
}

impl Member {
    /// `fetched`'s success, recording `done`'s record for its retention.
    pub fn new(fetched: Fetched, done: &Done<'_>) -> Member {
        Member {
            fetched,
            record: done.record(),
            retention: done.retention,
            keyed: done.keyed,
            own: None,
            spare: None,
        }
    }
}

impl Settler {
    /// Writes `member`'s success with the others of its list (see the module docs); `None` only
    /// if the call carrying it was lost with its leader (the job then stays in flight, held,
    /// and is put back when this process stops).
    pub(super) async fn commit(&self, member: Member) -> Option<Answer> {
        let gather = self.batches.of(&member.fetched.queue);
        match gather.join(member, MAX_ACKS).await {
            Joined::Answer(answer) => Some(answer),
            Joined::Lead(batch, replies) => replies.send(self.call(batch).await),
            Joined::Lost => {
                error!(
                    "a success's batch was lost with the processor that carried it: the job stays in flight until this process stops"
                );
                None
            }
        }
    }

    /// One `MULTI` for `batch`: each success's answer, in order.
    async fn call(&self, mut batch: Vec<Member>) -> Vec<Answer> {
        let mut settle = super::handle(&self.client);
        let want = batch.iter().filter(|m| m.own.is_some()).count();
        let spares: Vec<_> = batch.iter_mut().filter_map(|m| m.spare.take()).collect();
        let acks: Vec<Ack<'_>> = batch
            .iter()
            .map(|m| Ack {
                job: &m.fetched,
                record: &m.record,
                retention: m.retention,
                keyed: m.keyed,
            })
            .collect();
        let seen = self.fetcher.order().passing().generation();
        let call = settle.ack_and_take(&acks, want);
        let acked = super::write::sent_then(call, move || drop(spares)).await;
        drop(acks);
        match acked {
            Ok(acked) => self.written(batch, acked, seen).await,
            Err(e) => {
                let e = Arc::new(e);
                let answer = |m: Member| Answer {
                    fetched: m.fetched,
                    written: Err(e.clone()),
                };
                batch.into_iter().map(answer).collect()
            }
        }
    }

    /// Hands the jobs a call took to the processors that wanted one, in order, and forgets
    /// every job it wrote.
    async fn written(&self, batch: Vec<Member>, acked: Acked, seen: u64) -> Vec<Answer> {
        let gone = acked.removed.iter().filter(|removed| !**removed).count();
        if gone > 0 {
            let queue = &batch[0].fetched.queue;
            super::not_in_flight(self.fetcher.leases(), queue, gone);
            // Presumed dead and recovered: index the list the jobs just taken sit in.
            // Boxed: a rare path, whose future would weigh on every batch's.
            if let Err(e) = Box::pin(self.fetcher.leases().acquire(queue)).await {
                warn!(queue = %queue, error = %e, "could not renew the lease after a recovery");
            }
        }
        self.fetcher.hold(&acked.taken);
        let mut taken = acked.taken.into_iter();
        batch
            .into_iter()
            .map(|m| {
                self.fetcher.settled(&m.fetched);
                let next = m
                    .own
                    .and_then(|own| Some(Job::new(taken.next()?, own, seen)));
                Answer {
                    fetched: m.fetched,
                    written: Ok(next),
                }
            })
            .collect()
    }
}
