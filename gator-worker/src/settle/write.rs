//! The scripted writes: one script per outcome that takes the job out of the in-flight list and
//! records the outcome together. A write that fails for a passing reason (Redis away, a
//! failover, a timeout) is tried again with capped backoff: a job that ran must not be
//! forgotten because Redis blinked. A write that can never succeed (a key of the wrong type, a
//! cross-slot script) is logged and left: the job stays in flight, and recovery puts it back in
//! its queue.

use super::Kept;
use super::{Fetched, Killed};
use crate::fetcher::Slot;
use crate::held::Held;
use crate::outcome::Outcome;
use gator_core::Client;
use redis::{ErrorKind, ServerErrorKind};
use std::time::Duration;
use tracing::{error, warn};

/// Settles `job` with `outcome`; returns once it is written, or once it is clear it never will
/// be. `slot` is given back once the first try is sent (Redis runs one connection's commands in
/// order, so a fetch that reuses it lands after this write).
pub async fn write(
    client: &Client,
    job: &Fetched,
    outcome: &Outcome,
    kept: Kept,
    mut slot: Option<Slot>,
    (outage, leases): (&crate::outage::Outage, &crate::leases::Leases),
) {
    let mut delay = Duration::from_millis(100);
    loop {
        let attempt = try_write(client, job, outcome, kept);
        let settled = match slot.take() {
            Some(slot) => sent_then(attempt, move || drop(slot)).await,
            None => attempt.await,
        };
        if settled.is_ok() {
            outage.reached();
        }
        match settled {
            Ok(true) => return,
            Ok(false) => {
                // Either an earlier attempt whose reply was lost did record the outcome, or
                // the job was recovered meanwhile (this process's lease had expired) and its
                // queued copy will settle it. At least once, never lost, either way.
                super::not_in_flight(leases, &job.queue, 1);
                return;
            }
            Err(e) if !is_passing(&e) => {
                error!(queue = %job.queue, error = %e, "cannot record a job's outcome, and trying again will not help: the job stays in flight and is put back in its queue by recovery");
                return;
            }
            Err(e) => {
                if !outage.failed(&e) {
                    warn!(queue = %job.queue, error = %e, retry_in_ms = delay.as_millis() as u64, "cannot record a job's outcome; trying again");
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Polls `write` once, which hands its command to the connection, then runs `sent`, then
/// finishes `write`.
///
/// The worker's writes and fetches share one multiplexed connection, and Redis runs one
/// connection's commands in the order they were sent. So a slot given back here is reused by a
/// fetch that reaches Redis after this job's outcome: the process never holds more jobs in
/// Redis than it has slots, yet a fetch can take every slot whose job is being settled, and
/// batches stay large. (Should the first poll not send, the only cost is a fetch racing ahead
/// by one job.)
pub(crate) async fn sent_then<F: Future>(write: F, sent: impl FnOnce()) -> F::Output {
    let mut write = std::pin::pin!(write);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(write.as_mut().poll(cx))).await;
    sent();
    match first {
        std::task::Poll::Ready(output) => output,
        std::task::Poll::Pending => write.await,
    }
}

/// One try at the outcome's script; `Ok(false)` if the job was no longer in flight.
async fn try_write(
    client: &Client,
    job: &Fetched,
    outcome: &Outcome,
    kept: Kept,
) -> gator_core::Result<bool> {
    match outcome {
        Outcome::Done { .. } => done(client, job, outcome, kept.retention).await,
        Outcome::Retry { payload, delay } => {
            let due = super::handle(client).retry(job, payload, *delay).await?;
            Ok(due.is_some())
        }
        // Put back, unchanged, in its queue's scheduled set until its next time window.
        Outcome::Reschedule { delay } => {
            let due = super::handle(client).reschedule(job, *delay).await?;
            Ok(due.is_some())
        }
        // Parked with what it saved until its time.
        Outcome::Suspend {
            payload,
            wake,
            reason,
        } => {
            let due = super::handle(client)
                .suspend(job, payload, (*wake, reason))
                .await?;
            Ok(due.is_some())
        }
        // Back at the head of its queue, unchanged, for a worker that runs it.
        Outcome::HandBack => super::handle(client).release(job).await,
        Outcome::AwaitReply {
            record,
            key,
            timeout,
            resume,
        } => await_reply(client, job, (record, key, *resume), *timeout).await,
        Outcome::Discard { jid, tail, handoff } => {
            let ended = (jid.as_str(), handoff.as_deref());
            given_up(client, job, ended, ("discarded", tail), kept.retention).await
        }
        Outcome::Cancelled { jid, handoff } => {
            let ended = (jid.as_str(), handoff.as_deref());
            given_up(client, job, ended, ("cancelled", ""), kept.retention).await
        }
        Outcome::Dead { entry } => kill(client, job, entry, kept).await,
        // Settled by the script that judged it at the gate: only the hand-offs are left.
        Outcome::Expired {
            settled,
            handoff,
            orphaned_chains,
        } => {
            after_death(client, job, *settled, handoff.as_deref(), orphaned_chains).await;
            Ok(*settled)
        }
        // Settled without a write (`Settler::settle`): it stays in flight for shutdown.
        Outcome::Interrupted => Ok(true),
    }
}

/// A success that needs its script: it hands a chain or workflow step on (`ack.lua`), or
/// releases a unique job's lock.
async fn done(
    client: &Client,
    job: &Fetched,
    outcome: &Outcome,
    retention: Duration,
) -> gator_core::Result<bool> {
    let (
        Outcome::Done {
            handoff,
            unique_lock,
            ..
        },
        Some(done),
    ) = (outcome, outcome.done(retention))
    else {
        return Ok(false); // cannot happen: `done` is `Some` for every success
    };
    let mut settle = super::handle(client);
    // A unique job's success releases its lock in the same script (a hand-off's ack.lua
    // releases it too).
    if *unique_lock && handoff.is_none() {
        return settle.ack_unique(job, &done).await;
    }
    settle.ack(job, &done, handoff.as_deref()).await
}

/// An attempt that ends waiting for a reply: the job leaves its queue with its wait record.
async fn await_reply(
    client: &Client,
    job: &Fetched,
    (record, key, resume): (&str, &str, bool),
    timeout: Duration,
) -> gator_core::Result<bool> {
    let mut settle = super::handle(client);
    let settled = settle
        .await_reply(job, (record, key, resume), timeout)
        .await?;
    // The wait is recorded: registering it now only saves the wait for the next drain.
    if settled && let Err(e) = settle.advance(&job.queue, record).await {
        warn!(queue = %job.queue, error = %e, "could not register a job's wait for its reply yet; the next drain of the outbox will");
    }
    Ok(settled)
}

/// The dead set: the entry is kept (trimmed to the cap), and a workflow step's death is
/// reported to its workflow.
async fn kill(
    client: &Client,
    job: &Fetched,
    entry: &str,
    Kept {
        dead_cap,
        retention,
    }: Kept,
) -> gator_core::Result<bool> {
    let handoff = crate::door::handoff_on_death(entry, retention);
    let Killed {
        settled,
        orphaned_chains,
    } = super::handle(client)
        .kill(job, entry, dead_cap, handoff.as_deref())
        .await?;
    after_death(client, job, settled, handoff.as_deref(), &orphaned_chains).await;
    Ok(settled)
}

/// After a death (or an expiry) was written: carries a workflow step's end to its workflow
/// (now only saves the wait for the next drain of the outbox), and deletes the waiting steps
/// of chains whose dead step the dead set's trim removed.
async fn after_death(
    client: &Client,
    job: &Fetched,
    settled: bool,
    handoff: Option<&str>,
    orphaned_chains: &[(String, String)],
) {
    let mut settle = super::handle(client);
    if let (true, Some(record)) = (settled, handoff)
        && let Err(e) = settle.advance(&job.queue, record).await
    {
        warn!(queue = %job.queue, error = %e, "could not report a workflow step's death to its workflow yet; the next drain of the outbox will");
    }
    if let Err(e) = settle.forget_chains(orphaned_chains).await {
        warn!(error = %e, chains = orphaned_chains.len(), "could not delete the waiting steps of chains whose dead step was trimmed");
    }
}

/// Settles a job that will not run again and is not kept in the dead set (cancelled, or
/// discarded by its retry strategy): `(jid, a workflow step's hand-off)`, recording `recorded`
/// (state, tail); the hand-off is carried on at once.
async fn given_up(
    client: &Client,
    job: &Fetched,
    (jid, handoff): (&str, Option<&str>),
    recorded: (&str, &str),
    retention: std::time::Duration,
) -> gator_core::Result<bool> {
    let mut settle = super::handle(client);
    let settled = settle
        .give_up(job, (jid, handoff), recorded, retention)
        .await?;
    if let (true, Some(record)) = (settled, handoff)
        && let Err(e) = settle.advance(&job.queue, record).await
    {
        warn!(queue = %job.queue, error = %e, "could not report a workflow step's end to its workflow yet; the next drain of the outbox will");
    }
    Ok(settled)
}

/// Puts `jobs`, taken ahead from `queue` but never run, back at the head of their queue
/// (their units released), for a queue found paused; what cannot go back now, recovery puts
/// back. Either way they are no longer this process's to hold.
pub async fn put_back(client: &Client, held: &Held, queue: &str, jobs: Vec<Fetched>) {
    let mut settle = super::handle(client);
    for job in jobs {
        if let Err(e) = settle.release(&job).await {
            warn!(queue = %queue, error = %e, "could not put back a job taken ahead of a pause; recovery puts it back");
        }
        held.settled(&job);
    }
}

/// Whether an error may go away by itself: Redis unreachable or restarting, a timeout, a
/// failover in progress, a busy script. Anything else (a key of the wrong type, a cross-slot
/// script, a refused permission) will fail the same way every time.
pub fn is_passing(error: &gator_core::Error) -> bool {
    if error.is_connection() {
        return true;
    }
    let gator_core::Error::Redis(e) = error else {
        return false;
    };
    match e.kind() {
        // A MULTI Redis refused whole (EXECABORT): passing if every command's refusal is, as a
        // Redis still loading its data after a restart refuses each with LOADING. Before, such
        // an outcome was given up on, and the job ran again after recovery.
        ErrorKind::Server(ServerErrorKind::ExecAbort) => e
            .clone()
            .into_server_errors()
            .is_some_and(|errors| !errors.is_empty() && errors.iter().all(|(_, e)| passing(e))),
        ErrorKind::Server(kind) => passing_kind(kind),
        // Codes redis-rs has no kind for: BUSY (a long script), OOM (scripts that only move
        // jobs carry allow-oom, but a write may still meet it).
        ErrorKind::Extension => matches!(e.code(), Some("BUSY" | "OOM")),
        _ => false,
    }
}

/// Whether one command's refusal is for a passing reason.
fn passing(error: &redis::ServerError) -> bool {
    error.kind().is_some_and(passing_kind) || matches!(error.code(), "BUSY" | "OOM")
}

fn passing_kind(kind: ServerErrorKind) -> bool {
    matches!(
        kind,
        ServerErrorKind::BusyLoading
            | ServerErrorKind::TryAgain
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
            | ServerErrorKind::ReadOnly
            | ServerErrorKind::NoScript
            | ServerErrorKind::Moved
            | ServerErrorKind::Ask
    )
}
