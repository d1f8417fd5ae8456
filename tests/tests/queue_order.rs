//! Which queue a worker takes its next job from: weighted shuffle, strict order, and
//! discovery of every known queue.

use gator_core::job;
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_worker::QueueSelection;
use gator_worker::clock::RedisClock;
use gator_worker::fetcher::Fetcher;
use gator_worker::leases::Leases;
use gator_worker::queues::QueueOrder;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

async fn fill(redis: &RedisServer, queue: &str, n: usize) {
    let jobs: Vec<String> = (0..n).map(|i| format!("{queue}-{i}")).collect();
    let mut conn = redis.client().await;
    redis::cmd("RPUSH")
        .arg(format!("gator:{{{queue}}}:queue"))
        .arg(jobs)
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
}

/// Fetches `n` jobs with `spec`'s order; returns the queue of each, in order.
async fn fetch_many(redis: &RedisServer, spec: &str, n: usize) -> Vec<String> {
    let client = client(&redis.url()).await;
    let order = QueueOrder::new(spec.parse::<QueueSelection>().unwrap());
    let process = "test-process".to_owned();
    let leases = Leases::new(
        client.clone(),
        process.clone(),
        Duration::from_secs(60),
        Arc::new(RedisClock::default()),
    );
    let fetcher = Fetcher::new(
        client.clone(),
        Arc::new(order),
        Arc::new(leases),
        process,
        1,
        gator_core::store::DEFAULT_RETENTION,
    );
    let running = CancellationToken::new();
    let mut queues = Vec::with_capacity(n);
    for _ in 0..n {
        let job = fetcher
            .next(&running)
            .await
            .unwrap()
            .expect("a job is waiting");
        fetcher.settled(&job.fetched);
        queues.push(job.fetched.queue);
    }
    queues
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weighted_queues_are_served_in_proportion_to_their_weights() {
    let redis = RedisServer::start();
    fill(&redis, "high", 4000).await;
    fill(&redis, "default", 4000).await;

    let fetches = 4000;
    let queues = fetch_many(&redis, "high:3,default:1", fetches).await;
    let high = queues.iter().filter(|q| *q == "high").count();
    // Both queues stay non-empty, so each fetch takes `high` with probability 3/4:
    // expected 3000, standard deviation about 27; allow more than five of them.
    assert!(
        (2850..=3150).contains(&high),
        "high served {high} of {fetches} fetches"
    );
    assert!(
        queues.iter().any(|q| q == "default"),
        "the light queue must not starve"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_order_drains_the_first_queue_before_the_next() {
    let redis = RedisServer::start();
    fill(&redis, "critical", 50).await;
    fill(&redis, "default", 50).await;
    let queues = fetch_many(&redis, "critical,default", 100).await;
    assert!(queues[..50].iter().all(|q| q == "critical"), "{queues:?}");
    assert!(queues[50..].iter().all(|q| q == "default"), "{queues:?}");
}

static RAN: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[job]
async fn note_queue(queue: String) {
    RAN.lock().unwrap().push(queue);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_queues_a_worker_serves_every_known_queue_even_ones_created_later() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    NoteQueue::call("alpha".into())
        .queue("alpha")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), None, 3);
    // Created after the worker started: the poller's pass re-reads the known-queues set.
    NoteQueue::call("beta".into())
        .queue("beta")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    NoteQueue::call("gamma".into())
        .queue("gamma")
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    wait_until(
        "jobs of all three queues to run",
        Duration::from_secs(15),
        || async { RAN.lock().unwrap().len() >= 3 },
    )
    .await;
    let mut ran = RAN.lock().unwrap().clone();
    ran.sort();
    assert_eq!(ran, vec!["alpha", "beta", "gamma"]);
    worker.stop().await;
}

static FIRST: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[job]
async fn first_of_its_queue(queue: String) {
    FIRST.lock().unwrap().push(queue);
}

/// A worker that knows no queue yet parks its processors; the poller's discovery of the first
/// queue wakes them (before, they slept out their 60 s idle recheck: the job started ~58 s late).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_started_on_an_empty_redis_runs_the_first_job_of_a_new_queue_within_seconds() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // As `gator-worker` without `--queues`: every known queue, the default poll interval.
    let config = gator_worker::WorkerConfig::new(redis.url());
    assert_eq!(config.queues, QueueSelection::AllKnown);
    let worker = TestWorker::start_with(config);
    // Up and idle a while, as a worker waiting for its first job: its processors found
    // nothing to fetch and parked.
    let admin = gator_core::Admin::new(client.clone());
    wait_until("the worker up 2 s", Duration::from_secs(10), || async {
        let now = client.redis_time().await.unwrap();
        let processes = admin.processes().await.unwrap();
        processes
            .first()
            .is_some_and(|p| now >= p.started_at_ms + 2_000)
    })
    .await;
    let dispatched = std::time::Instant::now();
    FirstOfItsQueue::call("fresh".into())
        .queue("fresh")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    // Discovery takes one poller pass (0.5 to 1.5 s); 5 s is a wide margin.
    wait_until(
        "the first job of the new queue to run",
        Duration::from_secs(5),
        || async { !FIRST.lock().unwrap().is_empty() },
    )
    .await;
    eprintln!(
        "the first job of a new queue ran {:?} after its dispatch",
        dispatched.elapsed()
    );
    assert_eq!(*FIRST.lock().unwrap(), vec!["fresh"]);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_knows_no_queue_yet_is_listed_among_the_processes() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), None, 2);
    wait_until(
        "the worker to register",
        Duration::from_secs(10),
        || async { redis.cli(&["ZCARD", "gator:processes"]) == "1" },
    )
    .await;
    let processes = gator_core::Admin::new(client.clone()).processes().await;
    let processes = processes.expect("the processes are listed with no queue known");
    assert_eq!(processes.len(), 1, "{processes:?}");
    worker.stop().await;
}

static SERVED: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[job]
async fn served_from(queue: String) {
    SERVED.lock().unwrap().push(queue);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_worker_serves_weighted_queues_in_proportion_to_their_weights() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    for queue in ["heavy", "light"] {
        client
            .dispatch_many((0..3000).map(|_| ServedFrom::call(queue.to_owned()).queue(queue)))
            .await
            .unwrap();
    }
    // Each job's success takes the next job when the draw picks its own queue; the draw
    // must decide the next fetch otherwise too, or the worker would favour the queue it is on.
    let worker = TestWorker::start(&redis.url(), Some("heavy:3,light:1"), 10);
    wait_until("2,000 jobs to run", Duration::from_secs(30), || async {
        SERVED.lock().unwrap().len() >= 2000
    })
    .await;
    worker.stop().await;
    let served = SERVED.lock().unwrap();
    let heavy = served[..2000].iter().filter(|q| *q == "heavy").count();
    // Expected 1,500, standard deviation about 19: allow five of them.
    assert!(
        (1400..=1600).contains(&heavy),
        "the heavy queue served {heavy} of 2,000 jobs"
    );
}
