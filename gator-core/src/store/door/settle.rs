//! [`Settle`]: every outcome write of a job in flight, each one script that takes the job out
//! of its in-flight list and records the outcome together, and the hand-offs that follow.

use crate::error::Result;
use crate::payload::PayloadDocument;
use crate::store::ack::{Ack, Acked, ack_and_take};
use crate::store::dead::DeadCap;
use crate::store::expiry::{self, Judged};
use crate::store::fetched::{Fetched, Killed, Verdict};
use crate::store::keys::Keys;
use crate::store::status::Done;
use crate::store::{cancel, chain, durable, handoff, inflight, reply, unique};
use crate::transport::connection::Connection;
use crate::transport::replication::ReplicaWait;
use crate::wire::durable::Wake;
use std::time::Duration;

/// Writes a fetched job's outcome: a success, a retry, a reschedule, a hand back, a death, a
/// cancel or discard, an expiry judged at its start, a wait for a reply. Each write returns
/// whether the job was still in flight (false: recovery took it meanwhile, nothing written).
/// Holds the shared connection, the key names and the replica wait. For the worker's settle
/// room alone (`gator-worker/src/settle/`), which owns every outcome write.
pub struct Settle<'a> {
    conn: Connection,
    keys: &'a Keys,
    wait: Option<&'a ReplicaWait>,
}

impl<'a> Settle<'a> {
    /// A handle on a client's shared connection `conn`, under `keys`; with `wait`, a hand-off
    /// reaches the next queue's replicas before its copy is deleted.
    pub fn new(conn: Connection, keys: &'a Keys, wait: Option<&'a ReplicaWait>) -> Self {
        Settle { conn, keys, wait }
    }

    /// Settles plain successes and takes up to `take` more jobs of their queue, in one `MULTI`.
    pub async fn ack_and_take(&mut self, acks: &[Ack<'_>], take: usize) -> Result<Acked> {
        ack_and_take(&mut self.conn, self.keys, acks, take).await
    }

    /// Settles a success; with a `handoff` record (see [`Settle::handoff_on_success`]) in the
    /// same script (`ack.lua`), then carries it on.
    pub async fn ack(
        &mut self,
        job: &Fetched,
        done: &Done<'_>,
        handoff: Option<&str>,
    ) -> Result<bool> {
        inflight::ack(&mut self.conn, self.keys, job, done, handoff, self.wait).await
    }

    /// Settles a unique job's success and releases its lock in the same script.
    pub async fn ack_unique(&mut self, job: &Fetched, done: &Done<'_>) -> Result<bool> {
        unique::ack(&mut self.conn, self.keys, job, done).await
    }

    /// Releases a unique job's lock without settling it (a job that cannot run). Whether it
    /// held one.
    pub async fn release_unique(&mut self, job: &Fetched) -> Result<bool> {
        unique::release(&mut self.conn, self.keys, job).await
    }

    /// Settles a failure that runs again `delay` from now with the `updated` payload
    /// (`retry.lua`): its due time (ms, Redis time), or `None` if it was no longer in flight.
    pub async fn retry(
        &mut self,
        job: &Fetched,
        updated: &str,
        delay: Duration,
    ) -> Result<Option<u64>> {
        inflight::retry(&mut self.conn, self.keys, job, updated, delay).await
    }

    /// Puts a job back, unchanged, in its queue's scheduled set `delay` from now.
    pub async fn reschedule(&mut self, job: &Fetched, delay: Duration) -> Result<Option<u64>> {
        inflight::reschedule(&mut self.conn, self.keys, job, delay).await
    }

    /// Parks a durable job that sleeps or yields its slice as `payload` in its queue's
    /// scheduled set until `wake`, recorded `suspended` for `reason` (`suspend.lua`). Its due
    /// time, or `None` if it was no longer in flight.
    pub async fn suspend(
        &mut self,
        job: &Fetched,
        payload: &str,
        (wake, reason): (Wake, &str),
    ) -> Result<Option<u64>> {
        durable::suspend(&mut self.conn, self.keys, job, payload, wake, reason).await
    }

    /// Puts a job back, unchanged, at the head of its queue (`release.lua`).
    pub async fn release(&mut self, job: &Fetched) -> Result<bool> {
        inflight::release(&mut self.conn, self.keys, job).await
    }

    /// Settles a job into its queue's dead set as `entry`, trimmed to `cap` (`kill.lua`), with
    /// a workflow step's `handoff` ([`Settle::handoff_on_death`]).
    pub async fn kill(
        &mut self,
        job: &Fetched,
        entry: &str,
        cap: DeadCap,
        handoff: Option<&str>,
    ) -> Result<Killed> {
        inflight::kill(&mut self.conn, self.keys, job, entry, cap, handoff).await
    }

    /// Settles a job that will not run again and is not kept (cancelled, discarded): `jid`'s
    /// record says `recorded` (state, tail) for `retention` (`cancelled.lua`).
    pub async fn give_up(
        &mut self,
        job: &Fetched,
        (jid, handoff): (&str, Option<&str>),
        recorded: (&str, &str),
        retention: Duration,
    ) -> Result<bool> {
        let keys = self.keys;
        cancel::settle_as(&mut self.conn, keys, job, jid, retention, handoff, recorded).await
    }

    /// Judges a job with a deadline at its start and, if it has come, settles it into the dead
    /// set as `entry` (`kill.lua`); otherwise records it running.
    pub async fn expire_kill(
        &mut self,
        job: &Fetched,
        (entry, judged): (&str, Judged),
        cap: DeadCap,
        handoff: Option<&str>,
    ) -> Result<Verdict> {
        expiry::kill(&mut self.conn, self.keys, job, entry, judged, cap, handoff).await
    }

    /// Judges a job with a deadline at its start and, if it has come, settles it without
    /// keeping it (`cancelled.lua`); otherwise records it running.
    pub async fn expire_drop(
        &mut self,
        job: &Fetched,
        (jid, judged): (&str, Judged),
        retention: Duration,
        handoff: Option<&str>,
    ) -> Result<Verdict> {
        expiry::drop(
            &mut self.conn,
            self.keys,
            job,
            (jid, judged),
            retention,
            handoff,
        )
        .await
    }

    /// Settles a job as waiting for the reply to `key` (`await.lua`), its wait `record` in its
    /// queue's outbox; carry the record on with [`Settle::advance`].
    pub async fn await_reply(
        &mut self,
        job: &Fetched,
        (record, key, resume): (&str, &str, bool),
        timeout: Duration,
    ) -> Result<bool> {
        reply::settle_waiting(
            &mut self.conn,
            self.keys,
            job,
            (record, key, resume),
            timeout,
        )
        .await
    }

    /// Carries on the hand-off `record` that a settle wrote in `queue`'s outbox (a chain's next
    /// step, a workflow step's end, a wait for a reply), then removes it.
    pub async fn advance(&mut self, queue: &str, record: &str) -> Result<()> {
        handoff::advance(&mut self.conn, self.keys, queue, record, self.wait).await
    }

    /// Deletes the waiting steps of `chains` (`(list queue, chain id)`) whose dead step the
    /// dead set's trim removed ([`Killed::orphaned_chains`]).
    pub async fn forget_chains(&mut self, chains: &[(String, String)]) -> Result<()> {
        chain::forget(&mut self.conn, self.keys, chains).await
    }

    /// The outbox record a success of `doc` writes, if it has one (a workflow step's report,
    /// with `result`; a chain step's link to its next step).
    pub fn handoff_on_success(
        doc: &PayloadDocument<'_>,
        result: Option<&str>,
        retention: Duration,
    ) -> Option<String> {
        handoff::on_success(doc, result, retention)
    }

    /// The outbox record a death writes: a workflow step's report, from its dead-set `entry`.
    pub fn handoff_on_death(entry: &str, retention: Duration) -> Option<String> {
        handoff::on_death(entry, retention)
    }

    /// The outbox record of a workflow step that ended otherwise (`end`: `dead`, `cancelled`).
    pub fn handoff_on_end(payload: &str, end: &str, retention: Duration) -> Option<String> {
        handoff::on_end(payload, end, retention)
    }
}
