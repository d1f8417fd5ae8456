//! The two writes of a success that needs no script, each able to bring this processor's next
//! job in the same round trip: with plain commands on a plain queue, batched with the other
//! successes of its in-flight list (`Settler::ack_and_next`, `super::batch`),
//! or handed to the queue's admission on a queue under flow control (`Settler::ack_admitted`),
//! whose next call writes it ([`admitted_written`] then lets the jobs go).

use super::batch::Member;
use super::{Done, Fetched};
use super::{Next, Settler, Unwritten};
use crate::fetcher::Job;
use crate::fetcher::Start;
use crate::held::Held;
use crate::leases::Leases;
use tokio_util::sync::CancellationToken;

impl Settler {
    /// Writes a success with plain commands, with the other successes of its in-flight list
    /// that gathered meanwhile ([`super::batch`]), and takes this processor's next job in the
    /// same round trip: from the same queue in the same `MULTI`, when this processor's next
    /// fetch draws that queue first anyway (a worker draining a queue pays one cheap round trip
    /// per batch, with no script); from the queue drawn, when it is another, by an `LMOVE` sent
    /// beside it ([`Fetcher::fetch_beside`](crate::fetcher::Fetcher)). Otherwise it only
    /// writes, and gives the slot back as soon as the call is sent. A failed call gives the job
    /// back, with the job fetched beside it, if any (its slot given back already otherwise).
    pub(super) async fn ack_and_next(
        &self,
        job: Job,
        done: &Done<'_>,
        stop: &CancellationToken,
    ) -> Result<Next, Unwritten> {
        let Job { fetched, slot, .. } = job;
        // One draw decides this fetch's first queue, here or in the next fetch.
        let drawn = self.fetcher.order().draw_first();
        let going = !stop.is_cancelled();
        // The draw names a queue; the next job comes from the same list (shard) as this one,
        // unless this worker passes over some of its jobs: a plain LMOVE would take those too;
        // and only under a lease that surely holds, as for any plain LMOVE: after a failover,
        // one taken under a lease the new master no longer has would run twice.
        let take = going
            && drawn.as_deref() == Some(gator_core::shards::logical_queue(&fetched.queue))
            && !self.fetcher.order().passing().passes(&fetched.queue)
            && self.fetcher.leases().takes_plainly(&fetched.queue);
        let beside = going
            && !take
            && drawn
                .as_deref()
                .is_some_and(|q| self.fetcher.fetches_beside(q));
        let mut member = Member::new(fetched, done);
        let mut own_beside = None;
        match slot.into_own() {
            // Only its own slot: another processor's free slot would make its next job follow
            // this draw, not its own, and tilt the weights toward the queue in hand.
            Ok(own) if take => member.own = Some(own),
            Ok(own) if beside => own_beside = Some(own),
            // Not taking: the slot goes back once the call is on its way (see
            // `write::sent_then`), or, shared with a sync body's thread, once that ends too.
            unused => member.spare = Some(unused),
        }
        // It may take a job: shutdown must wait for it as for any fetch.
        let _fetching = self.fetcher.fetch_guard();
        let (answer, after) = match (own_beside, drawn) {
            (Some(own), Some(queue)) => {
                let seen = self.fetcher.order().passing().generation();
                let (answer, taken) =
                    tokio::join!(self.commit(member), self.fetcher.fetch_beside(&queue));
                let after = match taken {
                    Some(taken) => Next::Job(Job::new(taken, own, seen)),
                    None => Next::Fetch(Start::After(queue)),
                };
                (answer, after)
            }
            (_, drawn) => (self.commit(member).await, Next::Fetch(Start::from(drawn))),
        };
        let Some(answer) = answer else {
            return Ok(after);
        };
        match answer.written {
            Ok(Some(next)) => Ok(Next::Job(next)),
            // Nothing taken from this queue: the next job is the one fetched beside, or the
            // next fetch starts where the draw said.
            Ok(None) => Ok(after),
            Err(e) => Err((answer.fetched, e, after.into_job())),
        }
    }

    /// A success of a job admitted from a queue under flow control: it goes to the queue's
    /// admission, which writes it with its next call (the job stays held until then), and,
    /// when the draw picks the same queue, this processor's next job comes from the jobs taken
    /// ahead, or from that call.
    pub(super) async fn ack_admitted(
        &self,
        job: Job,
        done: &Done<'_>,
        stop: &CancellationToken,
    ) -> Next {
        let Job { fetched, slot, .. } = job;
        let drawn = self.fetcher.order().draw_first();
        let take = !stop.is_cancelled() && drawn.as_deref() == Some(fetched.queue.as_str());
        let _fetching = self.fetcher.fetch_guard();
        let own = match slot.into_own() {
            Ok(own) if take => Some(own),
            // Not taking (or a sync body's thread still shares the slot): ack alone.
            _ => None,
        };
        let queue = fetched.queue.clone();
        let admission = self.fetcher.admission();
        let seen = self.fetcher.order().passing().generation();
        match admission
            .admit(&queue, Some((fetched, done.tail())), own.is_some())
            .await
        {
            Ok(turn) => match own.map(|own| Job::first_of(turn.jobs, own, seen)) {
                Some(Ok(next)) => Next::Job(next),
                Some(Err(_)) | None => Next::Fetch(Start::from(drawn)),
            },
            // The success is in the admission's hands; only the next job failed: fetch again.
            Err(_) => Next::Fetch(Start::from(drawn)),
        }
    }
}

/// After an admission's call carried `acks` (successes of this process on `queue`): each one
/// it wrote (`acked`, in order), or found gone, is no longer this process's to hold. Those past
/// the end of `acked` were not written, and wait for the next call.
pub fn admitted_written(
    queue: &str,
    acks: &[(Fetched, String)],
    acked: &[bool],
    (held, leases): (&Held, &Leases),
) {
    let gone = acked.iter().filter(|acked| !**acked).count();
    if gone > 0 {
        super::not_in_flight(leases, queue, gone);
    }
    for (job, _) in acks.iter().take(acked.len()) {
        held.settled(job);
    }
}
