//! Shutdown is not failure: a job that stops when its worker's shutdown cancels its context is
//! put back at the head of its queue as it was (attempt not counted, no failure recorded),
//! exactly like one that ignores the cancellation, whatever it returns (`Ok` too, unless it
//! says it finished); a job may say it was interrupted itself; and a job cancelled by
//! `Client::cancel` still ends cancelled.

use gator_core::{Admin, CancelReason, Context, JobError, JobStatus, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_worker::{QueueSelection, WorkerConfig};
use std::sync::Mutex;
use std::time::Duration;

/// The reasons the jobs below saw, in order.
static REASONS: Mutex<Vec<Option<CancelReason>>> = Mutex::new(Vec::new());

fn note(ctx: &Context) {
    REASONS.lock().unwrap().push(ctx.cancel_reason());
}

/// Obeys its context, as the README shows, and returns an error when told to stop.
#[job(queue = "obeys", retries = 5)]
async fn obedient(ctx: Context) -> Result<(), String> {
    ctx.cancelled().await;
    note(&ctx);
    Err("stopped early".into())
}

/// Says it was interrupted, without being told to stop.
#[job(queue = "says", retries = 5)]
async fn interrupted(ctx: Context) -> Result<(), JobError> {
    note(&ctx);
    Err(JobError::interrupted("the upstream is restarting"))
}

/// Obeys its context and returns `Ok` when told to stop, its work unfinished.
#[job(queue = "obeys_ok", retries = 5)]
async fn obedient_ok(ctx: Context) {
    ctx.cancelled().await;
    note(&ctx);
}

/// Told to stop, says its work is complete all the same.
#[job(queue = "finishes", retries = 5)]
async fn finishes_anyway(ctx: Context) {
    ctx.cancelled().await;
    note(&ctx);
    ctx.finished_despite_shutdown();
}

/// Never looks at its context: ends on its own, after the shutdown deadline, within the grace.
#[job(queue = "oblivious", retries = 5)]
async fn oblivious() {
    tokio::time::sleep(Duration::from_millis(600)).await;
}

/// Runs until `Client::cancel` stops it.
#[job(queue = "cancels")]
async fn cancellable(ctx: Context) -> Result<(), String> {
    ctx.cancelled().await;
    note(&ctx);
    Err("cancelled".into())
}

fn worker(redis: &RedisServer, queue: &str) -> TestWorker {
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec![queue.into()]);
    config.shutdown_timeout = Duration::from_millis(300);
    TestWorker::start_with(config)
}

async fn running(client: &gator_core::Client, jid: &str) {
    wait_until("the job to run", Duration::from_secs(10), || async {
        matches!(client.status(jid).await.unwrap(), JobStatus::Running { .. })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_obeys_shutdown_goes_back_to_the_head_of_its_queue_unchanged() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = Obedient::call().through(&client).dispatch().await.unwrap();
    let behind = Obedient::call().through(&client).dispatch().await.unwrap();
    let worker = worker(&redis, "obeys");
    running(&client, &jid).await;
    worker.stop().await;

    assert!(
        REASONS
            .lock()
            .unwrap()
            .contains(&Some(CancelReason::Shutdown))
    );
    let head = redis.cli(&["LINDEX", "gator:{obeys}:queue", "0"]);
    let payload: serde_json::Value = serde_json::from_str(&head).expect("a job at the head");
    assert!(
        payload["jid"] == jid.as_str() || payload["jid"] == behind.as_str(),
        "{payload}"
    );
    for raw in redis
        .cli(&["LRANGE", "gator:{obeys}:queue", "0", "-1"])
        .lines()
    {
        let payload: serde_json::Value = serde_json::from_str(raw).unwrap();
        assert_eq!(
            payload["attempt"].as_u64().unwrap_or(0),
            0,
            "no attempt counted: {payload}"
        );
        assert!(
            payload.get("error").is_none(),
            "no failure recorded: {payload}"
        );
    }
    assert_eq!(
        redis.cli(&["LLEN", "gator:{obeys}:queue"]),
        "2",
        "both back"
    );
    assert_eq!(
        redis.cli(&["ZCARD", "gator:{obeys}:retry"]),
        "0",
        "not retried"
    );
    assert_eq!(client.status(&jid).await.unwrap(), JobStatus::Queued);
    let overview = Admin::new(client.clone()).overview().await.unwrap();
    assert_eq!(overview.failed, 0, "not counted as failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_says_it_was_interrupted_runs_again_without_an_attempt_counted() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = Interrupted::call()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "says");
    wait_until("it to run twice", Duration::from_secs(10), || async {
        REASONS
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.is_none())
            .count()
            >= 2
    })
    .await;
    worker.stop().await;
    assert_eq!(
        redis.cli(&["ZCARD", "gator:{says}:retry"]),
        "0",
        "not retried"
    );
    assert_eq!(redis.cli(&["ZCARD", "gator:{says}:dead"]), "0");
    let status = client.status(&jid).await.unwrap();
    assert!(
        matches!(status, JobStatus::Queued | JobStatus::Scheduled { .. }),
        "{status:?}"
    );
    let overview = Admin::new(client.clone()).overview().await.unwrap();
    assert_eq!(overview.failed, 0, "not counted as failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cancelled_by_the_client_still_ends_cancelled() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = Cancellable::call()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "cancels");
    running(&client, &jid).await;
    client.cancel(&jid).await.unwrap();
    wait_until("it to end cancelled", Duration::from_secs(10), || async {
        matches!(
            client.status(&jid).await.unwrap(),
            JobStatus::Cancelled { .. }
        )
    })
    .await;
    worker.stop().await;
    assert!(
        REASONS
            .lock()
            .unwrap()
            .contains(&Some(CancelReason::Cancelled))
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{cancels}:queue"]), "0");
}

/// The job's payload at the head of `queue`, which must hold exactly one job.
fn only_job(redis: &RedisServer, queue: &str) -> serde_json::Value {
    let key = format!("gator:{{{queue}}}:queue");
    assert_eq!(redis.cli(&["LLEN", &key]), "1", "one job back in {key}");
    serde_json::from_str(&redis.cli(&["LINDEX", &key, "0"])).expect("a job at the head")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_told_of_the_shutdown_that_returns_ok_goes_back_to_the_head_of_its_queue() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = ObedientOk::call()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "obeys_ok");
    running(&client, &jid).await;
    worker.stop().await;

    let status = client.status(&jid).await.unwrap();
    assert_eq!(
        status,
        JobStatus::Queued,
        "its work was cut short: it runs again"
    );
    let payload = only_job(&redis, "obeys_ok");
    assert_eq!(payload["jid"], jid.as_str());
    assert_eq!(
        payload["attempt"].as_u64().unwrap_or(0),
        0,
        "no attempt counted: {payload}"
    );
    let overview = Admin::new(client.clone()).overview().await.unwrap();
    assert_eq!(overview.failed, 0, "not counted as failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_says_it_finished_despite_the_shutdown_is_recorded_done() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = FinishesAnyway::call()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "finishes");
    running(&client, &jid).await;
    worker.stop().await;

    let status = client.status(&jid).await.unwrap();
    assert!(
        matches!(status, JobStatus::Done { attempts: 1, .. }),
        "{status:?}"
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{finishes}:queue"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_ends_in_the_grace_without_being_told_of_the_shutdown_is_done() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = Oblivious::call().through(&client).dispatch().await.unwrap();
    let worker = worker(&redis, "oblivious");
    running(&client, &jid).await;
    // Past the 300 ms shutdown timeout it is still running; it ends within the grace, its
    // work complete: the shutdown never reached it.
    worker.stop().await;

    let status = client.status(&jid).await.unwrap();
    assert!(
        matches!(status, JobStatus::Done { attempts: 1, .. }),
        "{status:?}"
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{oblivious}:queue"]), "0");
}
