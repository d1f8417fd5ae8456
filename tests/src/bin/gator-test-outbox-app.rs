//! An application that writes an order and enqueues its job in one PostgreSQL transaction, for
//! tests/tests/outbox_crashes.rs: `gator-test-outbox-app` (reading `DATABASE_URL`) commits
//! order after order (`INSERT INTO app_orders`, then `ShipOrder::call(id).enqueue_in`), and
//! prints each job's jid once its transaction has committed, until it is SIGKILLed. It runs
//! no relay and talks to no Redis: whatever it committed must reach Redis without it.

use gator_core::job;
use gator_outbox::EnqueueIn;
use gator_outbox::sqlx::{Connection, PgConnection};
use std::io::Write;

/// Ships an order. Its body runs in the test's worker, never here.
#[job(queue = "outbox_app")]
async fn ship_order(_order: i64) {}

#[tokio::main]
async fn main() {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let mut conn = PgConnection::connect(&url)
        .await
        .expect("a PostgreSQL connection");
    let mut out = std::io::stdout().lock();
    for order in 1_i64.. {
        let mut tx = conn.begin().await.expect("a transaction");
        gator_outbox::sqlx::query("INSERT INTO app_orders (id) VALUES ($1)")
            .bind(order)
            .execute(&mut *tx)
            .await
            .expect("the order is written");
        let jid = ShipOrder::call(order)
            .enqueue_in(&mut tx)
            .await
            .expect("the job is enqueued");
        tx.commit().await.expect("the transaction commits");
        // The test kills this process at any moment, this line included.
        let _ = writeln!(out, "{order} {jid}");
        let _ = out.flush();
    }
}
