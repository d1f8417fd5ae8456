//! The outbox's schema is applied by `gator::outbox::migrate` and by an app's own sqlx
//! migrator from the crate's migration folder alike, either after the other, and any number of
//! times; a second `migrate` racing the first waits for it. A private PostgreSQL per test.

use gator::outbox::sqlx::{self, PgPool};
use gator::outbox::{EnqueueIn, Relay};
use gator_core::{JobError, job};
use gator_tests::{PostgresServer, RedisServer};
use std::path::Path;

#[job(queue = "outbox_schema")]
async fn noop(n: u32) -> Result<(), JobError> {
    let _ = n;
    Ok(())
}

fn folder() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../gator-outbox/migrations"
    ))
}

/// Enqueues one job and relays it: the schema works.
async fn works(pool: &PgPool, redis: &RedisServer) {
    let client = gator_tests::client(&redis.url()).await;
    let mut tx = pool.begin().await.unwrap();
    Noop::call(1).enqueue_in(&mut tx).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(Relay::new(pool.clone(), client).drain().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migration_folder_runs_under_sqlx_migrate_and_beside_migrate() {
    let (pg, redis) = (PostgresServer::start(), RedisServer::start());
    let pool = PgPool::connect(&pg.url()).await.unwrap();
    let migrator = sqlx::migrate::Migrator::new(folder()).await.unwrap();
    assert_eq!(migrator.iter().count(), 1);
    migrator.run(&pool).await.unwrap();
    gator::outbox::migrate(&pool).await.unwrap();
    migrator.run(&pool).await.unwrap();
    works(&pool, &redis).await;
    let comment: String = sqlx::query_scalar("SELECT obj_description('gator_outbox'::regclass)")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(comment, "gator outbox, schema 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_runs_again_and_from_many_processes_at_once() {
    let (pg, redis) = (PostgresServer::start(), RedisServer::start());
    let pool = PgPool::connect(&pg.url()).await.unwrap();
    let racing: Vec<_> = (0..4)
        .map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move { gator::outbox::migrate(&pool).await })
        })
        .collect();
    for one in racing {
        one.await.unwrap().unwrap();
    }
    gator::outbox::migrate(&pool).await.unwrap();
    let triggers: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_trigger WHERE tgname = 'gator_outbox_notify'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(triggers, 1);
    works(&pool, &redis).await;
}
