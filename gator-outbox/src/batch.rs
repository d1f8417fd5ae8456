//! One batch of the relay: committed rows taken `FOR UPDATE SKIP LOCKED` in id order, relayed
//! to Redis, then deleted (or marked dead with their reason) in the same transaction. The row
//! locks keep other relays off them until this transaction ends; if this relay dies first,
//! PostgreSQL frees them and another relays them again, which Redis's guard makes a no-op.

use crate::error::Result;
use gator_core::Client;
use gator_core::outbox::{Outcome, Row, relay};
use sqlx::{PgPool, Row as _};

/// The rows a batch takes: the oldest waiting ones no other relay holds.
const TAKE: &str = "SELECT id, payload, options FROM gator_outbox WHERE dead_at IS NULL \
     ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED";

/// A relay that stalls between its take and its commit (Redis frozen, the process stopped)
/// holds its rows no longer than this: PostgreSQL ends its session, and the rows go to
/// another relay. Far above a Redis command's timeout, far below the guard's hour.
const STALL: &str = "SET LOCAL idle_in_transaction_session_timeout = '60s'";

const DELETE: &str = "DELETE FROM gator_outbox WHERE id = ANY($1)";

const BURY: &str = "UPDATE gator_outbox SET dead_at = clock_timestamp(), reason = d.reason \
     FROM UNNEST($1::bigint[], $2::text[]) AS d(id, reason) WHERE gator_outbox.id = d.id";

/// What one batch did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moved {
    /// Rows taken.
    pub(crate) taken: usize,
    /// Rows whose job is in Redis now (pushed by this batch, or found relayed before).
    pub(crate) relayed: usize,
    /// Rows Redis refused, now dead.
    pub(crate) dead: usize,
}

/// Takes up to `limit` rows, relays them through `client` and settles them. An error leaves
/// every row it took where it was (the transaction rolls back), to be taken again.
pub(crate) async fn run(pool: &PgPool, client: &Client, limit: usize) -> Result<Moved> {
    let mut tx = pool.begin().await?;
    sqlx::query(STALL).execute(&mut *tx).await?;
    let taken = sqlx::query(TAKE)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await?;
    if taken.is_empty() {
        tx.rollback().await?;
        return Ok(Moved::default());
    }
    let mut ids = Vec::with_capacity(taken.len());
    let mut rows = Vec::with_capacity(taken.len());
    for row in &taken {
        ids.push(row.try_get::<i64, _>(0)?);
        rows.push(Row {
            payload: row.try_get(1)?,
            options: row.try_get(2)?,
        });
    }
    let outcomes = relay(client, &rows).await?;
    crash_seam();
    let mut done = Vec::with_capacity(ids.len());
    let (mut dead, mut reasons) = (Vec::new(), Vec::new());
    for (id, outcome) in ids.iter().zip(outcomes) {
        match outcome {
            Outcome::Refused(reason) => {
                dead.push(*id);
                reasons.push(reason);
            }
            Outcome::Pushed | Outcome::Before | Outcome::Duplicate(_) => done.push(*id),
        }
    }
    if !done.is_empty() {
        sqlx::query(DELETE).bind(&done).execute(&mut *tx).await?;
    }
    if !dead.is_empty() {
        tracing::warn!(rows = dead.len(), reason = %reasons[0], "outbox rows Redis refused are dead");
        sqlx::query(BURY)
            .bind(&dead)
            .bind(&reasons)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(Moved {
        taken: ids.len(),
        relayed: done.len(),
        dead: dead.len(),
    })
}

/// With the `crash-seams` feature (the workspace's tests only): the process aborts here, after
/// Redis has the batch and before PostgreSQL forgets its rows, when `GATOR_OUTBOX_ABORT_AFTER`
/// names this batch's number (1 for the first): the crash tests' SIGKILL at the worst moment.
fn crash_seam() {
    #[cfg(feature = "crash-seams")]
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        static BATCHES: AtomicU64 = AtomicU64::new(0);
        let n = BATCHES.fetch_add(1, Ordering::Relaxed) + 1;
        let at = std::env::var("GATOR_OUTBOX_ABORT_AFTER").ok();
        if at.and_then(|a| a.parse::<u64>().ok()) == Some(n) {
            std::process::abort();
        }
    }
}
