//! The outbox's schema: the table, its indexes and its NOTIFY trigger, as one migration file
//! (`migrations/`, `sqlx::migrate!`-compatible) that [`migrate`] applies.

use crate::error::Result;
use sqlx::PgPool;

/// The table the outbox writes to and the relays read.
pub const TABLE: &str = "gator_outbox";

/// The channel the insert trigger notifies and the relays listen on.
pub const CHANNEL: &str = "gator_outbox";

/// The migration, as plain SQL: safe to run again (every statement is `IF NOT EXISTS` or a
/// replacement).
pub const MIGRATION: &str = include_str!("../migrations/20261128000000_gator_outbox.sql");

/// A key for `pg_advisory_xact_lock`, so that workers starting together apply the schema one
/// at a time ("gator" in ASCII).
const LOCK: i64 = 0x0067_6174_6f72;

/// Applies the outbox's schema to the database `pool` connects to, in one transaction under an
/// advisory lock: a second run, or one racing it from another process, changes nothing. Also
/// `gator-worker outbox migrate`.
pub async fn migrate(pool: &PgPool) -> Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(LOCK)
        .execute(&mut *tx)
        .await?;
    sqlx::raw_sql(MIGRATION).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}
