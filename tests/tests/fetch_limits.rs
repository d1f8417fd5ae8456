//! What a process takes and holds: at any concurrency every job runs once; a process never
//! holds more jobs than its concurrency; with enough idle processors every queue is watched;
//! a sync job abandoned at its timeout keeps its slot until its thread ends.

use gator_core::job;
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

static RUNS: Mutex<Option<HashMap<u64, u32>>> = Mutex::new(None);

fn count_run(id: u64) {
    *RUNS
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .entry(id)
        .or_default() += 1;
}

fn runs() -> HashMap<u64, u32> {
    RUNS.lock().unwrap().clone().unwrap_or_default()
}

/// An IO-bound job: waits 50 ms, as a call to another service would.
#[job(queue = "wide")]
async fn io_bound(id: u64) {
    tokio::time::sleep(Duration::from_millis(50)).await;
    count_run(id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_processors_run_twenty_thousand_jobs_once_each() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jobs = 20_000u64;
    client
        .dispatch_many((0..jobs).map(IoBound::call))
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), Some("wide"), 10_000);
    wait_until("every job to run", Duration::from_secs(120), || async {
        runs().len() as u64 == jobs
    })
    .await;
    worker.stop().await;
    let runs = runs();
    let twice = runs.values().filter(|n| **n > 1).count();
    assert_eq!(twice, 0, "jobs ran twice without any process dying");
    assert_eq!(redis.cli(&["LLEN", "gator:{wide}:queue"]), "0");
    assert_eq!(redis.cli(&["KEYS", "gator:*:inflight:*"]), "");
}

/// A job 20 ms long.
#[job(queue = "narrow")]
async fn short(_id: u64) {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_never_holds_more_jobs_in_flight_than_its_concurrency() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    client
        .dispatch_many((0..300).map(Short::call))
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), Some("narrow"), 3);
    // Watch every in-flight list of the queue until the queue is drained.
    let mut conn = redis.client().await;
    let mut most = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("gator:{narrow}:inflight:*")
            .query_async(&mut conn)
            .await
            .unwrap();
        for key in keys {
            let held: usize = redis::cmd("LLEN")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .unwrap();
            most = most.max(held);
        }
        let left: usize = redis::cmd("LLEN")
            .arg("gator:{narrow}:queue")
            .query_async(&mut conn)
            .await
            .unwrap();
        if left == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    worker.stop().await;
    assert!(most > 0, "the watch never saw a job in flight");
    assert!(
        most <= 3,
        "a process of concurrency 3 held {most} jobs in flight"
    );
}

static PICKED_UP_MS: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Records how long after `sent_ms` it started.
#[job(queue = "w1")]
async fn picked_up(queue: String, sent_ms: u64) {
    PICKED_UP_MS
        .lock()
        .unwrap()
        .push((queue, now_ms().saturating_sub(sent_ms)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_as_many_idle_processors_as_queues_a_job_on_any_queue_starts_at_once() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let queues = ["w1", "w2", "w3", "w4"];
    let worker = TestWorker::start(&redis.url(), Some("w1:4,w2:3,w3:2,w4:1"), 4);
    tokio::time::sleep(Duration::from_millis(1500)).await; // every processor idle, blocking
    for round in 0..12 {
        let queue = queues[round % queues.len()];
        PickedUp::call(queue.to_owned(), now_ms())
            .queue(queue)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
        wait_until("the job to run", Duration::from_secs(5), || async {
            PICKED_UP_MS.lock().unwrap().len() > round
        })
        .await;
        // Let the processor that ran it block again, on the queue it left unwatched.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    worker.stop().await;
    // A queue nobody watched would wait for a blocked processor to time out and look (up to
    // a second); a watched one starts its job within milliseconds.
    let late: Vec<(String, u64)> = PICKED_UP_MS
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, ms)| *ms > 400)
        .cloned()
        .collect();
    assert!(late.is_empty(), "jobs waited for a watcher: {late:?}");
}

/// Calls of `command` counted by the server since its last `CONFIG RESETSTAT` (including those
/// made inside scripts).
fn calls(redis: &RedisServer, command: &str) -> u64 {
    let stats = redis.cli(&["INFO", "commandstats"]);
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().expect("a call count"))
}

static IDLE_RUNS: AtomicUsize = AtomicUsize::new(0);

#[job(queue = "idle0")]
async fn idle_run() {
    IDLE_RUNS.fetch_add(1, Ordering::SeqCst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_blocks_and_does_not_poll_its_queues() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // Every known queue: a queue that appears while the worker idles must be watched too.
    let queues: Vec<String> = (0..6).map(|i| format!("idle{i}")).collect();
    for queue in &queues {
        IdleRun::call()
            .queue(queue.clone())
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let worker = TestWorker::start(&redis.url(), None, 10);
    wait_until("the first jobs to run", Duration::from_secs(10), || async {
        IDLE_RUNS.load(Ordering::SeqCst) >= queues.len()
    })
    .await;
    // Idle past several blocking timeouts (1 s each), counting only from here.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    redis.cli(&["CONFIG", "RESETSTAT"]);
    tokio::time::sleep(Duration::from_millis(3500)).await;
    // `fetch.lua` pops with LPOP; a processor that timed out on an empty queue must block
    // again, not pass over every queue with the script.
    assert_eq!(
        calls(&redis, "lpop"),
        0,
        "an idle worker ran fetch.lua (a poll) instead of blocking"
    );
    assert!(
        calls(&redis, "blmove") >= 6,
        "its processors were not blocking"
    );
    // A queue first dispatched to now, and a known one: both start promptly.
    let before = IDLE_RUNS.load(Ordering::SeqCst);
    for queue in ["idle-new", "idle3"] {
        IdleRun::call()
            .queue(queue)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    wait_until("both jobs to run", Duration::from_secs(10), || async {
        IDLE_RUNS.load(Ordering::SeqCst) >= before + 2
    })
    .await;
    worker.stop().await;
}

static SYNC_RUNNING: AtomicUsize = AtomicUsize::new(0);
static SYNC_MOST: AtomicUsize = AtomicUsize::new(0);
static SYNC_DONE: AtomicUsize = AtomicUsize::new(0);

/// A sync job that runs 600 ms, past its 100 ms timeout: its thread cannot be stopped.
#[job(queue = "sync", timeout = "100ms", retries = 0)]
fn overruns() {
    let now = SYNC_RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    SYNC_MOST.fetch_max(now, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(600));
    SYNC_RUNNING.fetch_sub(1, Ordering::SeqCst);
    SYNC_DONE.fetch_add(1, Ordering::SeqCst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_job_past_its_timeout_keeps_its_slot_until_its_thread_ends() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    client
        .dispatch_many((0..3).map(|_| Overruns::call()))
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), Some("sync"), 1);
    wait_until(
        "the three bodies to end",
        Duration::from_secs(20),
        || async { SYNC_DONE.load(Ordering::SeqCst) == 3 },
    )
    .await;
    worker.stop().await;
    assert_eq!(
        SYNC_MOST.load(Ordering::SeqCst),
        1,
        "a worker of concurrency 1 ran several job bodies at once"
    );
    assert_eq!(
        redis.cli(&["ZCARD", "gator:{sync}:dead"]),
        "3",
        "each timed out"
    );
}
