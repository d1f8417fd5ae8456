//! What each outbox relay reports of itself in Redis, so the dashboard's overview, the CLI
//! and any Redis reader see the outbox without a database connection.

use crate::client::Client;
use crate::error::Result;
use crate::store::relayed;
use serde::{Deserialize, Serialize};

/// A report older than this on Redis's clock is a relay that stopped: skipped and dropped.
pub const STALE_AFTER_MS: u64 = 60_000;

/// One relay's figures, as it last wrote them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The relay's id (its worker process's, or one an embedding app gave).
    pub relay: String,
    /// When it wrote this, ms since the epoch on Redis's clock.
    pub at_ms: u64,
    /// Committed rows not yet in Redis (dead rows aside), as it last counted them.
    pub waiting: u64,
    /// Rows in the outbox's dead state.
    pub dead: u64,
    /// How long the oldest waiting row has waited, ms (0 with none waiting).
    pub lag_ms: u64,
    /// Rows this relay moved into Redis per second, over its last report's span.
    pub rows_per_second: f64,
    /// Rows this relay moved into Redis since it started.
    pub relayed: u64,
}

/// Writes `report` as its relay's, stamped with Redis's time.
pub async fn publish(client: &Client, mut report: Report) -> Result<()> {
    report.at_ms = client.redis_time().await?;
    let text = serde_json::to_string(&report)?;
    relayed::report(
        &mut client.connection(),
        client.keys(),
        &report.relay,
        &text,
    )
    .await
}

/// The reports of the relays that wrote in the last [`STALE_AFTER_MS`], by relay id; older
/// ones (and any that are not a report) are dropped from Redis.
pub async fn reports(client: &Client) -> Result<Vec<Report>> {
    let mut conn = client.connection();
    let now = client.redis_time().await?;
    let mut fresh = Vec::new();
    let mut stale = Vec::new();
    for (id, text) in relayed::reports(&mut conn, client.keys()).await? {
        match serde_json::from_str::<Report>(&text) {
            Ok(report) if report.at_ms + STALE_AFTER_MS >= now => fresh.push(report),
            _ => stale.push(id),
        }
    }
    relayed::forget(&mut conn, client.keys(), &stale).await?;
    Ok(fresh)
}
