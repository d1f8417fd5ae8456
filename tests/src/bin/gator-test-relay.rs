//! An outbox relay in a process of its own, for tests/tests/outbox_crashes.rs to SIGKILL:
//! `gator-test-relay` runs `gator_outbox::Relay::run` from the outbox at `DATABASE_URL` to the
//! Redis at `REDIS_URL`, `GATOR_RELAY_BATCH` rows a batch (100 by default), until it is killed.
//! Built with gator-outbox's `crash-seams`: `GATOR_OUTBOX_ABORT_AFTER=<n>` aborts it after
//! batch n's Redis write, before its rows are deleted.

use gator_outbox::sqlx::PgPool;
use gator_outbox::{Relay, RelayConfig};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() {
    let pg = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let redis = std::env::var("REDIS_URL").expect("REDIS_URL");
    let batch = std::env::var("GATOR_RELAY_BATCH")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(100);
    let pool = PgPool::connect(&pg).await.expect("a PostgreSQL pool");
    let client = gator_core::Client::connect(&redis)
        .await
        .expect("a Redis client");
    let config = RelayConfig {
        batch,
        // A NOTIFY wakes it; the poll only covers rows committed before it listened.
        poll: Duration::from_millis(200),
        report_every: Duration::from_secs(60),
        id: format!("test-relay-{}", std::process::id()),
    };
    Relay::with_config(pool, client, config)
        .run(CancellationToken::new())
        .await;
}
