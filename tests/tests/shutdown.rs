//! Graceful shutdown: running jobs finish; past the timeout they go back to their queue.

use gator_core::job;
use gator_tests::{RedisServer, TestWorker, client, spawn_worker_process, terminate, wait_until};
use gator_worker::{QueueSelection, WorkerConfig};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static STARTED: AtomicUsize = AtomicUsize::new(0);
static FINISHED: AtomicUsize = AtomicUsize::new(0);

#[job(queue = "slow")]
async fn slow(millis: u64) {
    STARTED.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(millis)).await;
    FINISHED.fetch_add(1, Ordering::SeqCst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_for_a_running_job_then_returns_and_a_timeout_puts_jobs_back() {
    // One test for both cases: they share the process-wide counters.
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;

    // 1. Within the timeout: the running job finishes before the worker returns.
    let worker = TestWorker::start(&redis.url(), Some("slow"), 2);
    Slow::call(800).through(&client).dispatch().await.unwrap();
    wait_until("the job to start", Duration::from_secs(10), || async {
        STARTED.load(Ordering::SeqCst) == 1
    })
    .await;
    worker.stop().await;
    assert_eq!(
        FINISHED.load(Ordering::SeqCst),
        1,
        "stop returned before the running job finished"
    );
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("slow")
            .await
            .unwrap(),
        0
    );

    // 2. Past the timeout: the unfinished job is put back at the head of its queue, whole.
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec!["slow".into()]);
    config.shutdown_timeout = Duration::from_millis(200);
    let worker = TestWorker::start_with(config);
    let jid = Slow::call(60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the long job to start", Duration::from_secs(10), || async {
        STARTED.load(Ordering::SeqCst) == 2
    })
    .await;
    worker.stop().await;
    assert_eq!(FINISHED.load(Ordering::SeqCst), 1);
    let back = redis.cli(&["LINDEX", "gator:{slow}:queue", "0"]);
    let payload: serde_json::Value =
        serde_json::from_str(&back).expect("the unfinished job is back in the queue");
    assert_eq!(payload["jid"], jid.as_str());
}

#[test]
fn sigterm_lets_the_running_job_finish_and_the_worker_exits_0() {
    let redis = RedisServer::start();
    redis.cli(&["SADD", "gator:queues", "default"]);
    redis.cli(&[
        "RPUSH",
        "gator:{default}:queue",
        r#"{"jid":"s1","job":"mark_after","args":[700],"queue":"default","created_at":1,"enqueued_at":1}"#,
    ]);
    let mut worker = spawn_worker_process(
        env!("CARGO_BIN_EXE_gator-test-worker"),
        &redis.url(),
        "default",
        2,
    );

    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while redis.cli(&["GET", "test:started"]) != "s1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = terminate(&mut worker);
    assert!(status.success(), "worker exited with {status}");
    assert_eq!(
        redis.cli(&["GET", "test:finished"]),
        "s1",
        "the running job was cut short"
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{default}:queue"]), "0");
}

static LONG_STARTED: AtomicUsize = AtomicUsize::new(0);

#[job(queue = "stuck")]
async fn long_one(millis: u64) {
    LONG_STARTED.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(millis)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_worker_that_cannot_put_its_jobs_back_keeps_its_lease_and_the_fleet_recovers_them()
 {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let config = |lease: u64| {
        let mut config = WorkerConfig::new(redis.url());
        config.queues = QueueSelection::Strict(vec!["stuck".into()]);
        config.shutdown_timeout = Duration::from_millis(200);
        config.recovery_interval = Duration::from_millis(200);
        config.lease = Duration::from_secs(lease);
        config
    };
    let worker = TestWorker::start_with(config(4));
    LongOne::call(60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the job to start", Duration::from_secs(10), || async {
        LONG_STARTED.load(Ordering::SeqCst) == 1
    })
    .await;
    // The queue's list is a string now: putting the job back at its head fails.
    redis.cli(&["SET", "gator:{stuck}:queue", "not a list"]);
    worker.stop().await;
    assert_eq!(
        redis.cli(&["ZCARD", "gator:{stuck}:leases"]),
        "1",
        "a worker that could not put its job back gave up its lease anyway"
    );
    assert_ne!(redis.cli(&["KEYS", "gator:{stuck}:inflight:*"]), "");
    // Repaired, the queue is recovered by the next worker once the lease expires.
    redis.cli(&["DEL", "gator:{stuck}:queue"]);
    let next = TestWorker::start_with(config(20));
    wait_until(
        "the stranded job to run again",
        Duration::from_secs(20),
        || async { LONG_STARTED.load(Ordering::SeqCst) == 2 },
    )
    .await;
    next.stop().await;
}
