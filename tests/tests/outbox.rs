//! The transactional outbox (`gator::outbox`): a job enqueued in a PostgreSQL transaction
//! exists once that transaction commits and not otherwise, and the relay moves it to Redis
//! once, with every option it was dispatched with. A private PostgreSQL (initdb in a temp dir)
//! and a private Redis per test; in-process workers.

use gator::outbox::sqlx::PgPool;
use gator::outbox::{EnqueueIn, Relay};
use gator_core::{Client, JobError, JobStatus, job};
use gator_tests::{PostgresServer, RedisServer, TestWorker, client, wait_until};
use std::sync::Mutex;
use std::time::Duration;

/// The orders the job below saw, in order.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn seen(order: &str) -> usize {
    SEEN.lock().unwrap().iter().filter(|o| *o == order).count()
}

/// Confirms an order.
#[job(queue = "outbox_mail")]
async fn confirm_order(order: String) -> Result<(), JobError> {
    SEEN.lock().unwrap().push(order);
    Ok(())
}

async fn pool(pg: &PostgresServer) -> PgPool {
    let pool = PgPool::connect(&pg.url()).await.unwrap();
    gator::outbox::migrate(&pool).await.unwrap();
    pool
}

async fn rows(pool: &PgPool) -> i64 {
    gator::outbox::sqlx::query_scalar("SELECT count(*) FROM gator_outbox")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_transaction_leaves_no_job_and_a_committed_one_runs_once() {
    let pg = PostgresServer::start();
    let redis = RedisServer::start();
    let pool = pool(&pg).await;
    let client: Client = client(&redis.url()).await;

    let mut tx = pool.begin().await.unwrap();
    let lost = ConfirmOrder::call("rolled-back".into())
        .enqueue_in(&mut tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();

    let mut tx = pool.begin().await.unwrap();
    let kept = ConfirmOrder::call("committed".into())
        .enqueue_in(&mut tx)
        .await
        .unwrap();
    assert_eq!(
        rows(&pool).await,
        0,
        "an uncommitted row is visible to the relay"
    );
    tx.commit().await.unwrap();

    let relay = Relay::new(pool.clone(), client.clone());
    assert_eq!(relay.drain().await.unwrap(), 1);
    assert_eq!(relay.drain().await.unwrap(), 0, "a row relayed twice");
    assert_eq!(
        rows(&pool).await,
        0,
        "the relayed row is still in the outbox"
    );
    assert_eq!(client.status(&lost).await.unwrap(), JobStatus::Unknown);

    let worker = TestWorker::start(&redis.url(), Some("outbox_mail"), 2);
    wait_until(
        "the committed job to run",
        Duration::from_secs(10),
        || async { seen("committed") == 1 },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    worker.stop().await;
    assert_eq!(seen("committed"), 1);
    assert_eq!(seen("rolled-back"), 0);
    assert!(matches!(
        client.status(&kept).await.unwrap(),
        JobStatus::Done { .. }
    ));
}
