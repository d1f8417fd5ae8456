//! The relay a worker process runs with `--outbox URL`: from the application's PostgreSQL
//! outbox to this worker's Redis, through the worker's own client (its namespace, payload
//! limit and `--wait-replicas`: a row is deleted only once the replicas confirm its job).
//!
//! 1. Open a small pool (lazily: a database that is down delays nothing else).
//! 2. Wait for the outbox table: a worker never applies the schema by itself (an app's
//!    migrations are its own to run), so a missing table is an error an operator must fix
//!    with `gator-worker outbox migrate`; the relay starts once it exists.
//! 3. Run [`gator_outbox::Relay::run`] until the worker's stop token is cancelled, with the
//!    process id as the relay's id in its reports.

use super::{OutboxConfig, OutboxDatabase};
use gator_core::Client;
use gator_outbox::sqlx::Connection as _;
use gator_outbox::{Relay, RelayConfig};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

/// How often a relay that cannot start looks again (the database away, the table missing).
pub const RECHECK: Duration = Duration::from_secs(10);

/// Runs the relay of `config` through `client` under `id` until `stop`.
pub async fn run(config: OutboxConfig, client: Client, id: String, stop: CancellationToken) {
    describe_metrics();
    let pool = config.database.pool();
    if wait_for_table(&config, &stop).await {
        info!(relay = %id, database = %config.database, batch = config.batch, "outbox relay started");
        let settings = RelayConfig {
            batch: config.batch,
            id,
            ..RelayConfig::default()
        };
        Relay::with_config(pool.clone(), client, settings)
            .run(stop)
            .await;
    }
    pool.close().await;
}

/// Step 2: true once the outbox table exists, false if stopped first.
async fn wait_for_table(config: &OutboxConfig, stop: &CancellationToken) -> bool {
    loop {
        match table_exists(&config.database).await {
            Ok(true) => return true,
            Ok(false) => {
                error!(database = %config.database, table = gator_outbox::TABLE, "the outbox table does not exist: run gator-worker outbox migrate against this database (or gator::outbox::migrate in the app); the relay starts once it exists");
            }
            Err(e) => {
                warn!(database = %config.database, error = %e, retry_in_s = RECHECK.as_secs(), "cannot reach the outbox database; retrying");
            }
        }
        tokio::select! {
            () = stop.cancelled() => return false,
            () = tokio::time::sleep(RECHECK) => {}
        }
    }
}

/// Whether the outbox table is where the relay's queries will look (the connection's
/// `search_path`), asked on a connection of its own, so that an error says why PostgreSQL
/// cannot be reached.
pub(crate) async fn table_exists(
    database: &OutboxDatabase,
) -> Result<bool, gator_outbox::sqlx::Error> {
    let mut conn = database.connect().await?;
    let exists = gator_outbox::sqlx::query_scalar("SELECT to_regclass($1::text) IS NOT NULL")
        .bind(gator_outbox::TABLE)
        .fetch_one(&mut conn)
        .await;
    let _ = conn.close().await; // the answer is in; a failed goodbye changes nothing
    exists
}

/// The help text of the relay's series, for `--metrics-bind` (the relay emits them through
/// the `metrics` facade; the recorder is installed by the time the worker runs).
fn describe_metrics() {
    metrics::describe_gauge!(
        "gator_outbox_waiting",
        "Committed outbox rows not yet relayed to Redis (dead rows aside), counted by this process's relay every 5 s, up to 1,000,000"
    );
    metrics::describe_gauge!(
        "gator_outbox_dead",
        "Outbox rows Redis refused (too large, an unknown job), waiting for gator-worker outbox retry or discard"
    );
    metrics::describe_gauge!(
        "gator_outbox_lag_seconds",
        "How long the oldest committed outbox row not yet in Redis has waited (0 with none)"
    );
    metrics::describe_gauge!(
        "gator_outbox_rows_per_second",
        "Outbox rows this process's relay moved to Redis per second, over its last 5 s"
    );
    metrics::describe_counter!(
        "gator_outbox_relayed_total",
        "Outbox rows this process's relay moved to Redis"
    );
}
