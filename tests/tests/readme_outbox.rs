//! The "Enqueue in a transaction" guide's examples compile as shown: an axum handler that
//! writes an order and its job in one transaction, many jobs in one statement, and a relay
//! inside an app's own process. Nothing runs here: tests/tests/outbox*.rs run the same calls
//! against a real PostgreSQL and Redis.

#[path = "readme/check.rs"]
mod readme_check;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use gator::outbox::sqlx::{self, PgPool};
use gator::outbox::{EnqueueIn, Relay, enqueue_many_in};
use gator::{CancellationToken, Client, JobError, job};

#[job(queue = "mail")]
async fn send_receipt(order: i64) -> Result<(), JobError> {
    let _ = order;
    Ok(())
}

#[job(queue = "search")]
async fn index_product(product: i64) -> Result<(), JobError> {
    let _ = product;
    Ok(())
}

#[derive(serde::Deserialize)]
struct NewOrder {
    email: String,
}

fn internal(e: impl std::fmt::Display) -> (StatusCode, String) {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

#[rustfmt::skip]
async fn place_order(
    State(pool): State<PgPool>,
    Json(order): Json<NewOrder>,
) -> Result<String, (StatusCode, String)> {
    let mut tx = pool.begin().await.map_err(internal)?;
    let id: i64 = sqlx::query_scalar("INSERT INTO orders (email) VALUES ($1) RETURNING id")
        .bind(&order.email)
        .fetch_one(&mut *tx)
        .await
        .map_err(internal)?;
    SendReceipt::call(id).enqueue_in(&mut tx).await.map_err(internal)?;
    tx.commit().await.map_err(internal)?; // the order and its job, or neither
    Ok(id.to_string())
}

#[rustfmt::skip]
async fn reindex(pool: &PgPool, products: Vec<i64>) -> Result<(), gator::outbox::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE products SET indexed = false WHERE id = ANY($1)")
        .bind(&products)
        .execute(&mut *tx)
        .await?;
    let jobs = products.into_iter().map(IndexProduct::call);
    enqueue_many_in(&mut tx, jobs).await?; // one INSERT for all of them
    tx.commit().await?;
    Ok(())
}

#[rustfmt::skip]
async fn start(pool: PgPool, client: Client) -> Result<(), Box<dyn std::error::Error>> {
    gator::outbox::migrate(&pool).await?;
    let stop = CancellationToken::new();
    tokio::spawn(Relay::new(pool, client).run(stop.clone()));
    // ... serve the app; on shutdown:
    stop.cancel();
    Ok(())
}

#[test]
fn the_guide_shows_this_code() {
    let _ = (place_order, reindex, start);
    let here = include_str!("readme_outbox.rs");
    readme_check::assert_shows(
        "docs/guide/outbox.md",
        "## Enqueue in the transaction",
        1,
        here,
    );
    readme_check::assert_shows(
        "docs/guide/outbox.md",
        "## Many jobs in one statement",
        1,
        here,
    );
    readme_check::assert_shows("docs/guide/outbox.md", "## The relay", 1, here);
}
