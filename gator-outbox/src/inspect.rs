//! Reading and repairing the outbox: its counts and lag, its dead rows, and putting them back
//! (after the cause is fixed) or discarding them. What `gator-worker outbox` shows and does.

use crate::error::Result;
use crate::schema::CHANNEL;
use sqlx::{PgPool, Row as _};
use std::time::Duration;

/// Waiting rows are counted up to this many: a count stays cheap however large the backlog.
pub const COUNT_CAP: i64 = 1_000_000;

/// The most dead rows one page lists.
pub const MAX_PAGE: i64 = 1_000;

/// The outbox at a glance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Committed rows not yet in Redis, counted up to [`COUNT_CAP`].
    pub waiting: u64,
    /// Rows in the dead state.
    pub dead: u64,
    /// How long the oldest waiting row has waited (zero with none): the relay's lag.
    pub lag: Duration,
}

/// A row Redis refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadRow {
    /// Its id in the table.
    pub id: i64,
    /// Its job's jid.
    pub jid: String,
    /// Its queue.
    pub queue: String,
    /// Its job's name.
    pub job: String,
    /// Why Redis refused it.
    pub reason: String,
    /// When it died, ms since the epoch (PostgreSQL's clock).
    pub dead_at_ms: i64,
}

const STATUS: &str = "SELECT \
     (SELECT count(*) FROM (SELECT 1 FROM gator_outbox WHERE dead_at IS NULL LIMIT $1) w), \
     (SELECT count(*) FROM gator_outbox WHERE dead_at IS NOT NULL), \
     COALESCE((SELECT EXTRACT(EPOCH FROM clock_timestamp() - created_at)::float8 \
               FROM gator_outbox WHERE dead_at IS NULL ORDER BY id LIMIT 1), 0)";

/// Counts the outbox: waiting and dead rows, and the lag.
pub async fn status(pool: &PgPool) -> Result<Status> {
    let row = sqlx::query(STATUS).bind(COUNT_CAP).fetch_one(pool).await?;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    let lag: f64 = row.try_get(2)?;
    Ok(Status {
        waiting: count(row.try_get(0)?),
        dead: count(row.try_get(1)?),
        lag: Duration::try_from_secs_f64(lag.max(0.0)).unwrap_or(Duration::ZERO),
    })
}

const DEAD: &str = "SELECT id, jid, queue, job, COALESCE(reason, ''), \
     (EXTRACT(EPOCH FROM dead_at) * 1000)::bigint FROM gator_outbox \
     WHERE dead_at IS NOT NULL ORDER BY dead_at DESC, id DESC LIMIT $1 OFFSET $2";

/// A page of dead rows, the newest first: `limit` (at most [`MAX_PAGE`]) from `offset`.
pub async fn dead(pool: &PgPool, limit: i64, offset: i64) -> Result<Vec<DeadRow>> {
    let rows = sqlx::query(DEAD)
        .bind(limit.clamp(0, MAX_PAGE))
        .bind(offset.max(0))
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|row| {
            Ok(DeadRow {
                id: row.try_get(0)?,
                jid: row.try_get(1)?,
                queue: row.try_get(2)?,
                job: row.try_get(3)?,
                reason: row.try_get(4)?,
                dead_at_ms: row.try_get(5)?,
            })
        })
        .collect()
}

/// Puts dead rows `ids` back to wait for a relay (and wakes the relays); how many it did.
pub async fn retry(pool: &PgPool, ids: &[i64]) -> Result<u64> {
    let sql = "UPDATE gator_outbox SET dead_at = NULL, reason = NULL \
               WHERE dead_at IS NOT NULL AND id = ANY($1)";
    wake_after(pool, sqlx::query(sql).bind(ids)).await
}

/// Puts every dead row back to wait for a relay; how many.
pub async fn retry_all(pool: &PgPool) -> Result<u64> {
    let sql = "UPDATE gator_outbox SET dead_at = NULL, reason = NULL WHERE dead_at IS NOT NULL";
    wake_after(pool, sqlx::query(sql)).await
}

/// Deletes dead rows `ids` for good; how many.
pub async fn discard(pool: &PgPool, ids: &[i64]) -> Result<u64> {
    let sql = "DELETE FROM gator_outbox WHERE dead_at IS NOT NULL AND id = ANY($1)";
    Ok(sqlx::query(sql)
        .bind(ids)
        .execute(pool)
        .await?
        .rows_affected())
}

/// Runs `update` and notifies the relays in the same transaction.
async fn wake_after(
    pool: &PgPool,
    update: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
) -> Result<u64> {
    let mut tx = pool.begin().await?;
    let n = update.execute(&mut *tx).await?.rows_affected();
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(CHANNEL)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(n)
}
