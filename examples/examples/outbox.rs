//! Enqueue in a transaction: an axum + sqlx shop whose "place an order" handler writes the
//! order and its confirmation job in one PostgreSQL transaction. The job exists exactly when
//! the order does: an order refused after its job was enqueued rolls back both, and a process
//! killed right after the commit still gets its job relayed, once. The relay runs inside the app
//! here (`gator::outbox::Relay`); in production every `gator-worker --outbox URL` runs one.
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 GATOR_OUTBOX_URL=postgres://me@127.0.0.1:5433/shop
//! cargo run -p gator-examples --example outbox` (`scripts/demo` runs it against a private Redis
//! and PostgreSQL). It places two orders through its own router, one of them refused, and
//! stops once the confirmation has run.

use axum::extract::State as AxumState;
use axum::http::{Request, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use gator::outbox::sqlx::{self, PgPool};
use gator::outbox::{EnqueueIn, Relay};
use gator::{CancellationToken, Client, JobError, Worker, job};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tower::ServiceExt;

/// Confirmations sent.
static CONFIRMED: AtomicU64 = AtomicU64::new(0);

#[job(queue = "orders")]
async fn confirm_order(order: i64, email: String) -> Result<(), JobError> {
    CONFIRMED.fetch_add(1, Ordering::SeqCst);
    println!("  [job]  order {order} confirmed to {email}");
    Ok(())
}

#[derive(serde::Deserialize)]
struct NewOrder {
    email: String,
    total_cents: i64,
}

type Refusal = (StatusCode, String);

fn internal(e: impl std::fmt::Display) -> Refusal {
    (StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// Writes the order and its confirmation job in one transaction.
async fn place_order(
    AxumState(pool): AxumState<PgPool>,
    Json(order): Json<NewOrder>,
) -> Result<Json<serde_json::Value>, Refusal> {
    let mut tx = pool.begin().await.map_err(internal)?;
    let id: i64 =
        sqlx::query_scalar("INSERT INTO orders (email, total_cents) VALUES ($1, $2) RETURNING id")
            .bind(&order.email)
            .bind(order.total_cents)
            .fetch_one(&mut *tx)
            .await
            .map_err(internal)?;
    let jid = ConfirmOrder::call(id, order.email)
        .enqueue_in(&mut tx)
        .await
        .map_err(internal)?;
    if order.total_cents <= 0 {
        // Dropping `tx` would roll back too: the order and its job are gone together.
        tx.rollback().await.map_err(internal)?;
        return Err((StatusCode::UNPROCESSABLE_ENTITY, "an empty order".into()));
    }
    tx.commit().await.map_err(internal)?;
    Ok(Json(serde_json::json!({ "order": id, "jid": jid })))
}

async fn post_order(router: &Router, email: &str, total_cents: i64) -> anyhow::Result<StatusCode> {
    let body = serde_json::json!({ "email": email, "total_cents": total_cents }).to_string();
    let request = Request::post("/orders")
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body))?;
    let response = router.clone().oneshot(request).await?;
    println!(
        "  [http] POST /orders {email} {total_cents} -> {}",
        response.status()
    );
    Ok(response.status())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let redis =
        std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let postgres = std::env::var("GATOR_OUTBOX_URL")?;
    let client = Client::connect(&redis).await?;
    let pool = PgPool::connect(&postgres).await?;
    gator::outbox::migrate(&pool).await?;
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS orders \
         (id BIGSERIAL PRIMARY KEY, email TEXT NOT NULL, total_cents BIGINT NOT NULL)",
    )
    .execute(&pool)
    .await?;

    let stop = CancellationToken::new();
    let relay = tokio::spawn(Relay::new(pool.clone(), client.clone()).run(stop.clone()));
    let worker = Worker::builder()
        .client(client.clone())
        .queues("orders")
        .job::<ConfirmOrder>()
        .log_to_stderr()
        .build()?;
    let worker = tokio::spawn(worker.run_until(stop.clone()));

    let router = Router::new()
        .route("/orders", post(place_order))
        .with_state(pool.clone());
    assert_eq!(
        post_order(&router, "ada@example.com", 4200).await?,
        StatusCode::OK
    );
    assert_eq!(
        post_order(&router, "nobody@example.com", 0).await?,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    while CONFIRMED.load(Ordering::SeqCst) < 1 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.cancel();
    relay.await?;
    worker.await??;
    let status = gator::outbox::status(&pool).await?;
    println!(
        "confirmed {} order(s); the outbox holds {} waiting and {} dead",
        CONFIRMED.load(Ordering::SeqCst),
        status.waiting,
        status.dead
    );
    anyhow::ensure!(
        CONFIRMED.load(Ordering::SeqCst) == 1,
        "the refused order was confirmed"
    );
    Ok(())
}
