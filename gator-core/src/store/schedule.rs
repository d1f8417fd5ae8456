//! The scheduled and retry sets: jobs that run later, and promoting them when due. Redis's
//! clock decides what is due, inside the scripts.

use crate::error::Result;
use crate::payload::Payload;
use crate::store::keys::Keys;
use crate::store::lease::millis;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// At most this many jobs move per script call, so one call never blocks Redis for long.
pub const PROMOTE_BATCH: usize = 1000;

/// When a job should run: at a time, or after a delay counted on Redis's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// At this time, ms since the Unix epoch (compared with Redis's clock).
    At(u64),
    /// This long from now, on Redis's clock.
    In(Duration),
}

/// Enqueues `payload` to run `when`: straight to its queue if that is already due by Redis's
/// clock, else into its scheduled set; a chain's `waiting` steps go into its list
/// `chain_list` in the same atomic step (`schedule.lua`). Returns the due time (ms, Redis
/// time) if the job was scheduled, `None` if it went to its queue.
///
/// The queue must be in the known-queues set already (a global key, written by its own
/// command: see [`super::queue::register`]).
pub async fn schedule(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payload: &Payload,
    when: When,
    chain_list: Option<(&str, &[Payload])>,
) -> Result<Option<u64>> {
    let mut invocation = scripts::SCHEDULE.key(keys.scheduled(&payload.queue));
    invocation.key(keys.queue(&payload.queue));
    match when {
        When::At(ms) => invocation.arg("at").arg(ms),
        When::In(delay) => invocation.arg("in").arg(millis(delay)),
    };
    invocation
        .arg(payload.to_json())
        .arg(super::later::horizon_ms()?);
    if let Some((key, waiting)) = chain_list {
        invocation.key(key);
        for step in waiting {
            invocation.arg(step.to_json());
        }
    }
    let due: u64 = invocation.invoke_async(conn).await?;
    Ok((due > 0).then_some(due))
}

/// What one promotion pass over a queue found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Promoted {
    /// How many jobs moved to the queue.
    pub moved: usize,
    /// How long until the earliest job still waiting in the queue's scheduled or retry set is
    /// due, on Redis's clock (`None`: nothing waits).
    pub next_due_in: Option<Duration>,
}

/// Moves every job of `queue` due by Redis's clock from the scheduled and retry sets to the
/// queue, and says how long until the next one is due. Each batch (of both sets) is one atomic
/// script call (`promote_due.lua`).
pub async fn promote_due(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<Promoted> {
    let mut promoted = Promoted::default();
    loop {
        let (moved, next_due, now, more): (usize, i64, u64, u8) = scripts::PROMOTE_DUE
            .key(keys.queue(queue))
            .key(keys.scheduled(queue))
            .key(keys.retry(queue))
            .arg(PROMOTE_BATCH)
            .invoke_async(conn)
            .await?;
        promoted.moved += moved;
        if more == 0 {
            promoted.next_due_in = u64::try_from(next_due)
                .ok()
                .map(|due| Duration::from_millis(due.saturating_sub(now)));
            break;
        }
    }
    Ok(promoted)
}
