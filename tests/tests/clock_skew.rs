//! A worker's own clock decides nothing: one whose clock runs far ahead promotes no scheduled
//! job early, trims no dead job early, and schedules retries from Redis's clock. Each worker
//! here runs under `faketime`, so every clock in its process is off, not just Gator's.

use gator_core::job;
use gator_tests::{RedisServer, WorkerCommand, client, wait_until};
use std::time::{Duration, SystemTime};

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

// The worker binary runs these; here they only give typed calls with the same wire names.
#[job]
async fn note_time(_id: u64) {}

#[job]
async fn discard_me(_id: u64) {}

#[job]
async fn fail_slowly(_id: u64) {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_clock_runs_90s_ahead_starts_a_scheduled_job_no_earlier_than_due() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _ahead = WorkerCommand::new(WORKER, &redis.url(), "default")
        .args(&["--poll-interval", "200ms"])
        .clock_offset("+90s")
        .spawn();
    let due = SystemTime::now() + Duration::from_secs(5);
    let due_ms = gator_core::payload::to_ms(due);
    NoteTime::call(1)
        .at(due)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until(
        "the scheduled job to run",
        Duration::from_secs(20),
        || async { !redis.cli(&["HGET", "test:started_at", "1"]).is_empty() },
    )
    .await;
    let started: u64 = redis
        .cli(&["HGET", "test:started_at", "1"])
        .parse()
        .unwrap();
    // Both times are on Redis's clock, which is this machine's.
    assert!(
        started >= due_ms,
        "the job started {} ms before it was due",
        due_ms - started
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_clock_runs_181_days_ahead_trims_no_dead_job_early() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // 50 jobs that died just now, by Redis's clock.
    let now = client.redis_time().await.unwrap();
    for i in 0..50 {
        let entry = format!(
            r#"{{"jid":"d{i}","job":"discard_me","args":[{i}],"queue":"default","created_at":1,"enqueued_at":1}}"#
        );
        redis.cli(&["ZADD", "gator:{default}:dead", &now.to_string(), &entry]);
    }
    let _ahead = WorkerCommand::new(WORKER, &redis.url(), "default")
        .clock_offset("+181d")
        .spawn();
    DiscardMe::call(51)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the job to die", Duration::from_secs(20), || async {
        redis.cli(&["ZCARD", "gator:{default}:dead"]) != "50"
    })
    .await;
    // Let any trim that would follow land too.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        redis.cli(&["ZCARD", "gator:{default}:dead"]),
        "51",
        "the dead set lost entries younger than its 180-day age limit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_clock_runs_five_minutes_ahead_schedules_a_retry_from_redis_time() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _ahead = WorkerCommand::new(WORKER, &redis.url(), "default")
        .clock_offset("+5m")
        .spawn();
    FailSlowly::call(1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the job to fail once", Duration::from_secs(20), || async {
        redis.cli(&["ZCARD", "gator:{default}:retry"]) == "1"
    })
    .await;
    let now = client.redis_time().await.unwrap();
    let due: f64 = redis
        .cli(&["ZRANGE", "gator:{default}:retry", "0", "0", "WITHSCORES"])
        .lines()
        .nth(1)
        .and_then(|score| score.parse().ok())
        .expect("a retry score");
    let wait_s = (due - now as f64) / 1000.0;
    // The job waits a minute before its retry (`backoff = ["60s"]`), counted from Redis's
    // clock, not from the worker's, five minutes ahead.
    assert!(
        (50.0..=61.0).contains(&wait_s),
        "the retry is due in {wait_s:.1} s"
    );
}
