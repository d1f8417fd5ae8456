//! A job enqueued through the outbox keeps every option a dispatch would have given it: its
//! due time (a delay counted on Redis's clock when it is relayed), its flow options, its
//! expiry, its unique lock, and the headers its client's middleware adds. A payload the client
//! would refuse is refused at the enqueue, in the app's transaction; a row relayed twice makes
//! one job. A private PostgreSQL and Redis per test.

use gator::outbox::sqlx::{self, PgPool};
use gator::outbox::{EnqueueIn, Relay};
use gator_core::payload::Payload;
use gator_core::{Client, Error, JobError, JobStatus, job};
use gator_tests::{PostgresServer, RedisServer};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Does nothing: the tests read where its jobs are stored.
#[job(queue = "outbox_opts")]
async fn ship(order: String) -> Result<(), JobError> {
    let _ = order;
    Ok(())
}

async fn pool(pg: &PostgresServer) -> PgPool {
    let pool = PgPool::connect(&pg.url()).await.unwrap();
    gator::outbox::migrate(&pool).await.unwrap();
    pool
}

async fn rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM gator_outbox")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The payloads in `queue`'s list, as stored.
async fn listed(redis: &RedisServer, queue: &str) -> Vec<Payload> {
    let mut conn = redis.client().await;
    let raw: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("gator:{{{queue}}}:queue"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    raw.iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect()
}

fn ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn due_times_expiry_headers_and_unique_locks_survive_the_outbox() {
    let (pg, redis) = (PostgresServer::start(), RedisServer::start());
    let pool = pool(&pg).await;
    let client = Client::builder(redis.url())
        .middleware(|job: &mut Payload| {
            job.headers.insert("tenant".into(), "acme".into());
            Ok(())
        })
        .connect()
        .await
        .unwrap();
    let at = SystemTime::now() + Duration::from_secs(7200);
    let mut tx = pool.begin().await.unwrap();
    let call = |o: &str| Ship::call(o.to_owned()).through(&client);
    let delayed = call("delayed").after(Duration::from_secs(3600));
    let delayed = delayed.enqueue_in(&mut tx).await.unwrap();
    let timed = call("timed").at(at).enqueue_in(&mut tx).await.unwrap();
    let expiring = call("expiring").expires_in(Duration::from_secs(600));
    let expiring = expiring.enqueue_in(&mut tx).await.unwrap();
    let first = call("unique")
        .unique_key("order-7")
        .enqueue_in(&mut tx)
        .await;
    let second = call("unique")
        .unique_key("order-7")
        .enqueue_in(&mut tx)
        .await;
    tx.commit().await.unwrap();
    // Relayed an hour of wall time later would still count the delay from the relay.
    let relayed_at = client.redis_time().await.unwrap();
    assert_eq!(
        Relay::new(pool.clone(), client.clone())
            .drain()
            .await
            .unwrap(),
        5
    );
    assert_eq!(rows(&pool).await, 0, "the unique duplicate's row stayed");

    let JobStatus::Scheduled { at: due } = client.status(&delayed).await.unwrap() else {
        panic!("the delayed job is not scheduled");
    };
    let due = ms(due);
    assert!(
        due >= relayed_at + 3_600_000 && due < relayed_at + 3_610_000,
        "a delay of an hour from {relayed_at} came out due at {due}"
    );
    assert_eq!(
        client.status(&timed).await.unwrap(),
        JobStatus::Scheduled {
            at: UNIX_EPOCH + Duration::from_millis(ms(at))
        }
    );
    let queued = listed(&redis, "outbox_opts").await;
    let jids: Vec<&str> = queued.iter().map(|p| p.jid.as_str()).collect();
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(
        jids,
        [expiring.as_str(), first.as_str()],
        "the queue holds {jids:?}"
    );
    assert_eq!(client.status(&second).await.unwrap(), JobStatus::Unknown);
    let expires_at = queued[0]
        .expires_at
        .expect("the expiring job lost its deadline");
    assert!(expires_at >= relayed_at + 600_000 && expires_at < relayed_at + 610_000);
    for payload in &queued {
        assert_eq!(
            payload.headers.get("tenant").map(String::as_str),
            Some("acme")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_options_park_the_relayed_job_on_a_controlled_queue() {
    let (pg, redis) = (PostgresServer::start(), RedisServer::start());
    let pool = pool(&pg).await;
    let client = gator_tests::client(&redis.url()).await;
    let mut tx = pool.begin().await.unwrap();
    let jid = Ship::call("vip".into())
        .queue("outbox_flow")
        .priority(9)
        .limit_key("tenant-1")
        .enqueue_in(&mut tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    Relay::new(pool.clone(), client.clone())
        .drain()
        .await
        .unwrap();
    let mut conn = redis.client().await;
    let controlled: bool = redis::cmd("SISMEMBER")
        .arg("gator:flow_queues")
        .arg("outbox_flow")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        controlled,
        "the queue of a job with flow options is not controlled"
    );
    assert_eq!(client.status(&jid).await.unwrap(), JobStatus::Queued);
    assert!(listed_is_marker(&redis, "outbox_flow").await);
}

/// Whether `queue`'s list key holds the controlled marker rather than jobs.
async fn listed_is_marker(redis: &RedisServer, queue: &str) -> bool {
    let mut conn = redis.client().await;
    let kind: String = redis::cmd("TYPE")
        .arg(format!("gator:{{{queue}}}:queue"))
        .query_async(&mut conn)
        .await
        .unwrap();
    kind != "list"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_over_the_clients_limit_is_refused_in_the_transaction() {
    let (pg, redis) = (PostgresServer::start(), RedisServer::start());
    let pool = pool(&pg).await;
    let small = Client::builder(redis.url())
        .max_payload(2048)
        .connect()
        .await
        .unwrap();
    let mut tx = pool.begin().await.unwrap();
    let refused = Ship::call("x".repeat(4096))
        .through(&small)
        .enqueue_in(&mut tx)
        .await;
    assert!(
        matches!(
            refused,
            Err(gator::outbox::Error::Gator(Error::PayloadTooLarge { .. }))
        ),
        "{refused:?}"
    );
    tx.commit().await.unwrap();
    assert_eq!(rows(&pool).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_relayed_twice_makes_one_job() {
    let (pg, redis) = (PostgresServer::start(), RedisServer::start());
    let pool = pool(&pg).await;
    let client = gator_tests::client(&redis.url()).await;
    let mut tx = pool.begin().await.unwrap();
    let jid = Ship::call("once".into()).enqueue_in(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    // What a relay killed between Redis's write and its DELETE leaves behind: the row, again.
    sqlx::query(
        "INSERT INTO gator_outbox (jid, queue, job, payload, options) \
         SELECT jid, queue, job, payload, options FROM gator_outbox",
    )
    .execute(&pool)
    .await
    .unwrap();
    let relay = Relay::new(pool.clone(), client.clone());
    relay.drain().await.unwrap();
    assert_eq!(rows(&pool).await, 0);
    let queued = listed(&redis, "outbox_opts").await;
    assert_eq!(
        queued.len(),
        1,
        "one row relayed twice made {} jobs",
        queued.len()
    );
    assert_eq!(queued[0].jid, jid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_with_flow_options_a_dispatch_would_refuse_goes_dead_alone() {
    let (pg, redis) = (PostgresServer::start(), RedisServer::start());
    let pool = pool(&pg).await;
    let client = gator_tests::client(&redis.url()).await;
    // Written by another producer: time windows that do not parse.
    let bad = serde_json::json!({
        "jid": "0191f6a0-0000-7000-8000-00000000bad1", "job": "ship", "args": ["x"],
        "queue": "outbox_opts", "created_at": 1, "enqueued_at": 1,
        "flow": {"windows": ["25:00-26:00"]}
    });
    sqlx::query("INSERT INTO gator_outbox (jid, queue, job, payload) VALUES ($1, $2, $3, $4)")
        .bind("0191f6a0-0000-7000-8000-00000000bad1")
        .bind("outbox_opts")
        .bind("ship")
        .bind(bad.to_string())
        .execute(&pool)
        .await
        .unwrap();
    let mut tx = pool.begin().await.unwrap();
    let good = Ship::call("good".into()).enqueue_in(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    let relayed = Relay::new(pool.clone(), client.clone()).drain().await;
    assert_eq!(relayed.unwrap(), 1, "the bad row held back its batch");
    let dead = gator::outbox::dead(&pool, 10, 0).await.unwrap();
    assert_eq!(dead.len(), 1);
    assert!(dead[0].reason.contains("25:00"), "{}", dead[0].reason);
    assert_eq!(listed(&redis, "outbox_opts").await[0].jid, good);
}
