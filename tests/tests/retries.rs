//! Retries: per-job counts and backoff, death after the last attempt, timeouts, the dead cap.

use gator_core::store::{DeadCap, Fetched, Settle};
use gator_core::{Client, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// When each run of each tagged job started.
static RUNS: Mutex<Option<HashMap<String, Vec<Instant>>>> = Mutex::new(None);

fn record(tag: &str) -> usize {
    let mut runs = RUNS.lock().unwrap();
    let times = runs
        .get_or_insert_with(HashMap::new)
        .entry(tag.to_owned())
        .or_default();
    times.push(Instant::now());
    times.len()
}

fn runs(tag: &str) -> Vec<Instant> {
    RUNS.lock()
        .unwrap()
        .as_ref()
        .and_then(|r| r.get(tag).cloned())
        .unwrap_or_default()
}

#[job(queue = "r", retries = 2, backoff = ["300ms", "600ms"])]
async fn always_fails(tag: String) -> Result<(), String> {
    let n = record(&tag);
    Err(format!("failure number {n}"))
}

fn tiny_backoff(failures: u32) -> Duration {
    Duration::from_millis(50 * u64::from(failures))
}

#[job(queue = "r", backoff = tiny_backoff)]
fn fails_twice_then_works(tag: String) -> Result<(), String> {
    if record(&tag) <= 2 {
        Err("not yet".into())
    } else {
        Ok(())
    }
}

#[job(queue = "r", retries = 1, backoff = ["300ms"])]
async fn fails_first_time(tag: String) -> Result<(), String> {
    match record(&tag) {
        1 => Err("first attempt fails".into()),
        _ => Ok(()),
    }
}

#[job(queue = "r")]
async fn works(tag: String) {
    record(&tag);
}

#[job(queue = "r", retries = 0)]
async fn fails_once(tag: String) -> Result<(), String> {
    record(&tag);
    Err("no second chance".into())
}

#[job(queue = "r", timeout = "200ms", retries = 0)]
async fn hangs(tag: String) {
    record(&tag);
    tokio::time::sleep(Duration::from_secs(30)).await;
    record(&format!("{tag}-finished"));
}

async fn dead_entries(redis: &RedisServer) -> Vec<Value> {
    redis.zset_json("gator:{r}:dead").await
}

async fn wait_dead(redis: &RedisServer, job: &str) -> Value {
    wait_until(
        &format!("{job} in the dead set"),
        Duration::from_secs(15),
        || async { dead_entries(redis).await.iter().any(|e| e["job"] == job) },
    )
    .await;
    dead_entries(redis)
        .await
        .into_iter()
        .find(|e| e["job"] == job)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_job_is_retried_after_its_backoff_and_dies_after_its_last_retry() {
    let redis = RedisServer::start();
    let client: Client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("r"), 2);
    AlwaysFails::call("a".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    let dead = wait_dead(&redis, "always_fails").await;
    let times = runs("a");
    assert_eq!(times.len(), 3, "one attempt and two retries");
    assert!(
        times[1] - times[0] >= Duration::from_millis(300),
        "first retry came after {:?}",
        times[1] - times[0]
    );
    assert!(
        times[2] - times[1] >= Duration::from_millis(600),
        "second retry came after {:?}",
        times[2] - times[1]
    );
    assert_eq!(dead["attempt"], 3);
    assert_eq!(dead["error"], "failure number 3");
    assert!(dead["retried_at"].as_u64().is_some() && dead["failed_at"].as_u64().is_some());
    assert_eq!(redis.cli(&["ZCARD", "gator:{r}:retry"]), "0");
    worker.stop().await;
}

/// The poller looks at the sets every 20 s here (10 to 30 s with its jitter), so a retry that
/// starts well within that was woken by the worker that wrote it, not found by a pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_retry_wakes_the_poller_instead_of_waiting_for_its_next_pass() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    config.queues = "r".parse().unwrap();
    config.concurrency = 2;
    config.poll_interval = Duration::from_secs(20);
    let worker = TestWorker::start_with(config);
    // Once a first job ran and a moment passed, the poller's first pass is over: it sleeps.
    Works::call("warm-up".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the warm-up job", Duration::from_secs(5), || async {
        !runs("warm-up").is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    FailsFirstTime::call("wake".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    wait_until("the retry", Duration::from_secs(8), || async {
        runs("wake").len() >= 2
    })
    .await;
    let times = runs("wake");
    assert!(
        times[1] - times[0] >= Duration::from_millis(300),
        "the retry came before its backoff, after {:?}",
        times[1] - times[0]
    );
    assert_eq!(redis.cli(&["ZCARD", "gator:{r}:retry"]), "0");
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_fails_then_works_is_retried_until_it_succeeds() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("r"), 2);
    FailsTwiceThenWorks::call("b".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    wait_until("the third run", Duration::from_secs(10), || async {
        runs("b").len() >= 3
    })
    .await;
    let times = runs("b");
    assert!(
        times[1] - times[0] >= Duration::from_millis(50)
            && times[2] - times[1] >= Duration::from_millis(100)
    );
    wait_until("the retry set to empty", Duration::from_secs(5), || async {
        redis.cli(&["ZCARD", "gator:{r}:retry"]) == "0"
    })
    .await;
    worker.stop().await;
    assert_eq!(runs("b").len(), 3, "no run after the success");
    assert_eq!(redis.cli(&["ZCARD", "gator:{r}:dead"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_zero_sends_a_failure_straight_to_the_dead_set() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("r"), 2);
    FailsOnce::call("c".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let dead = wait_dead(&redis, "fails_once").await;
    assert_eq!(dead["error"], "no second chance");
    assert_eq!(runs("c").len(), 1);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_job_past_its_timeout_is_cancelled_and_recorded_as_timed_out() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("r"), 2);
    Hangs::call("d".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let dead = wait_dead(&redis, "hangs").await;
    assert_eq!(dead["error"], "job timed out after 200ms");
    worker.stop().await;
    assert!(
        runs("d-finished").is_empty(),
        "the cancelled job went on running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dead_set_keeps_the_newest_entries_within_its_size_and_age() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut conn = client.connection();
    let mut settle = Settle::new(client.connection(), client.keys(), None);
    let cap = DeadCap {
        max_jobs: 5,
        max_age: Duration::from_secs(3600),
    };
    // One entry that died two hours ago by Redis's clock, then eight recent ones, each
    // settled out of an in-flight list as the worker does.
    let two_hours_ago = client.redis_time().await.unwrap() - 7_200_000;
    redis.cli(&[
        "ZADD",
        "gator:{r}:dead",
        &two_hours_ago.to_string(),
        "ancient",
    ]);
    let in_flight = |raw: &str| Fetched {
        queue: "r".into(),
        process: "p".into(),
        raw: raw.into(),
        admitted: false,
    };
    for i in 0..8u64 {
        let raw = format!("job-{i}");
        redis.cli(&["RPUSH", "gator:{r}:inflight:p", &raw]);
        let job = in_flight(&raw);
        let killed = settle.kill(&job, &raw, cap, None).await.unwrap();
        assert!(killed.settled);
        // Entries die 1 ms apart at least, so the order of the survivors is the order of death.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let left: Vec<String> = redis::cmd("ZRANGE")
        .arg("gator:{r}:dead")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(left, vec!["job-3", "job-4", "job-5", "job-6", "job-7"]);
}
