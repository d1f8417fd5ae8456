//! Redis at its memory limit. With `noeviction` a full Redis refuses new jobs, loudly, while
//! workers keep draining it: every script that only moves or removes jobs carries `allow-oom`.
//! Under any other policy Redis may evict jobs it accepted, and the worker says so.

use gator_core::job;
use gator_tests::{RedisServer, TestWorker, WorkerCommand, client, wait_until};
use gator_worker::{QueueSelection, WorkerConfig};
use std::sync::Mutex;
use std::time::Duration;

static RAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

#[job(queue = "mem")]
async fn remember(id: u64) {
    RAN.lock().unwrap().push(id);
}

#[job(queue = "mem", retries = 1, backoff = ["100ms"])]
async fn fails_twice(id: u64) -> Result<(), String> {
    Err(format!("job {id} fails"))
}

#[job(queue = "mem")]
async fn stays(millis: u64) {
    tokio::time::sleep(Duration::from_millis(millis)).await;
}

/// Puts Redis at its memory limit: `noeviction`, and `maxmemory` below what it uses already,
/// so every command that may grow memory is refused with OOM, as in a Redis that filled up.
fn fill_to_maxmemory(redis: &RedisServer) {
    redis.cli(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    redis.cli(&["CONFIG", "SET", "maxmemory", "1"]);
    assert!(
        redis.cli(&["SET", "one-more", "x"]).contains("OOM"),
        "Redis still accepts writes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_maxmemory_a_worker_still_runs_settles_retries_and_kills_every_queued_job() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let remembered = client
        .dispatch_many((0..200).map(Remember::call))
        .await
        .unwrap();
    client
        .dispatch_many((0..20).map(FailsTwice::call))
        .await
        .unwrap();
    fill_to_maxmemory(&redis);
    let refused = Remember::call(999).through(&client).dispatch().await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("OOM")),
        "a dispatch to a full Redis must fail with its reason: {refused:?}"
    );
    let worker = TestWorker::start(&redis.url(), Some("mem"), 4);
    wait_until(
        "every job to run and every failing one to die",
        Duration::from_secs(30),
        || async {
            RAN.lock().unwrap().len() >= 200 && redis.cli(&["ZCARD", "gator:{mem}:dead"]) == "20"
        },
    )
    .await;
    worker.stop().await;
    assert_eq!(redis.cli(&["LLEN", "gator:{mem}:queue"]), "0");
    assert_eq!(redis.cli(&["ZCARD", "gator:{mem}:retry"]), "0");
    assert_eq!(redis.cli(&["KEYS", "gator:*:inflight:*"]), "");
    // Settled with their status records (`ack_plain.lua`: a MULTI holding a SET is refused
    // whole at maxmemory).
    for jid in &remembered {
        assert!(
            matches!(
                client.status(jid).await.unwrap(),
                gator_core::JobStatus::Done { .. }
            ),
            "job {jid} is done"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_maxmemory_a_stopping_worker_puts_its_running_job_back_and_gives_up_its_lease() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec!["mem".into()]);
    config.shutdown_timeout = Duration::from_millis(200);
    let worker = TestWorker::start_with(config);
    let jid = Stays::call(60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the job to start", Duration::from_secs(10), || async {
        !redis.cli(&["KEYS", "gator:{mem}:inflight:*"]).is_empty()
    })
    .await;
    fill_to_maxmemory(&redis);
    worker.stop().await;
    let back = redis.cli(&["LINDEX", "gator:{mem}:queue", "0"]);
    assert!(
        back.contains(&jid),
        "the running job is back in its queue: {back}"
    );
    assert_eq!(redis.cli(&["KEYS", "gator:*:inflight:*"]), "");
    assert_eq!(redis.cli(&["ZCARD", "gator:{mem}:leases"]), "0");
}

/// At maxmemory an operator must be able to free memory: clearing a queue and deleting dead
/// jobs only remove data, so Redis must not refuse them (`clear_queue.lua`, `delete.lua`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_maxmemory_an_operator_can_clear_a_queue_and_delete_dead_jobs() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let admin = gator_core::Admin::new(client.clone());
    client
        .dispatch_many((0..50).map(|id| Remember::call(id).queue("stuck")))
        .await
        .unwrap();
    client
        .dispatch_many((0..10).map(FailsTwice::call))
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), Some("mem"), 4);
    wait_until(
        "the failing jobs to die",
        Duration::from_secs(30),
        || async { redis.cli(&["ZCARD", "gator:{mem}:dead"]) == "10" },
    )
    .await;
    worker.stop().await;
    fill_to_maxmemory(&redis);

    let dead = gator_core::SetKind::Dead;
    let one = admin.list_set(dead, Some("mem"), 0, 1).await.unwrap();
    assert!(
        admin.delete_entry(&one[0]).await.unwrap(),
        "one dead job deleted"
    );
    assert_eq!(admin.clear_set(dead, Some("mem")).await.unwrap(), 9);
    assert_eq!(admin.clear_queue("stuck").await.unwrap(), 50);
    assert_eq!(redis.cli(&["ZCARD", "gator:{mem}:dead"]), "0");
    assert_eq!(redis.cli(&["LLEN", "gator:{stuck}:queue"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_logs_an_error_when_redis_may_evict_jobs() {
    let risky = RedisServer::start();
    let safe = RedisServer::start();
    risky.cli(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]);
    let dir = tempfile::tempdir().unwrap();
    let (risky_log, safe_log) = (dir.path().join("risky.log"), dir.path().join("safe.log"));
    let worker = env!("CARGO_BIN_EXE_gator-test-worker");
    let _risky = WorkerCommand::new(worker, &risky.url(), "mem")
        .log_to(&risky_log)
        .spawn();
    let _safe = WorkerCommand::new(worker, &safe.url(), "mem")
        .log_to(&safe_log)
        .spawn();
    let warned = |path: &std::path::Path| {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("ERROR") && l.contains("maxmemory_policy=allkeys-lru"))
    };
    wait_until(
        "the worker on an evicting Redis to say so",
        Duration::from_secs(15),
        || async { warned(&risky_log) },
    )
    .await;
    wait_until(
        "the other worker to register",
        Duration::from_secs(15),
        || async { safe.cli(&["ZCARD", "gator:processes"]) == "1" },
    )
    .await;
    assert!(!warned(&safe_log), "a worker on a noeviction Redis warned");
    assert!(
        !std::fs::read_to_string(&safe_log)
            .unwrap_or_default()
            .contains("maxmemory"),
        "a worker on a noeviction Redis warned"
    );
}
