//! Never lose a job: in-flight jobs of dead processes come back, a clean stop leaves nothing in
//! flight, and Redis going away is survived by workers and reported promptly to clients.

use gator_core::job;
use gator_core::payload::now_ms;
use gator_tests::{
    RedisServer, ServerOptions, TestWorker, client, spawn_worker_process, terminate, wait_until,
};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static RAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

#[job(queue = "safe")]
async fn note_run(id: u64) {
    RAN.lock().unwrap().push(id);
}

fn ran(id: u64) -> bool {
    RAN.lock().unwrap().contains(&id)
}

fn in_flight_keys(redis: &RedisServer) -> String {
    redis.cli(&["KEYS", "gator:*:inflight:*"])
}

#[test]
fn a_job_in_flight_in_a_killed_worker_runs_again_when_the_worker_restarts() {
    let redis = RedisServer::start();
    redis.cli(&["SADD", "gator:queues", "default"]);
    redis.cli(&[
        "RPUSH",
        "gator:{default}:queue",
        r#"{"jid":"s1","job":"mark_after","args":[1500],"queue":"default","created_at":1,"enqueued_at":1}"#,
    ]);
    let mut worker = spawn_worker_process(
        env!("CARGO_BIN_EXE_gator-test-worker"),
        &redis.url(),
        "default",
        2,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while redis.cli(&["GET", "test:started"]) != "s1" {
        assert!(Instant::now() < deadline, "the job never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    worker.kill().unwrap(); // SIGKILL: no shutdown code runs
    worker.wait().unwrap();
    let key = in_flight_keys(&redis);
    assert_ne!(
        key, "",
        "the killed worker's job must still be recorded in flight"
    );
    assert_eq!(redis.cli(&["LLEN", &key]), "1");
    assert_eq!(redis.cli(&["LLEN", "gator:{default}:queue"]), "0");

    // The restarted worker recovers its dead predecessor's job at once and runs it to the end.
    let mut restarted = spawn_worker_process(
        env!("CARGO_BIN_EXE_gator-test-worker"),
        &redis.url(),
        "default",
        2,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while redis.cli(&["GET", "test:finished"]) != "s1" {
        assert!(
            Instant::now() < deadline,
            "the recovered job never finished"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(terminate(&mut restarted).success());
    assert_eq!(in_flight_keys(&redis), "", "nothing left in flight");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_flight_jobs_of_a_process_whose_heartbeat_expired_are_recovered_and_run() {
    let redis = RedisServer::start();
    // A process on another host that died a minute ago holding two jobs.
    let ghost = "elsewhere:4242:abcdef";
    redis.cli(&[
        "ZADD",
        "gator:processes",
        &(now_ms() - 60_000).to_string(),
        ghost,
    ]);
    redis.cli(&["SADD", "gator:queues", "safe"]);
    for id in [101, 102] {
        let payload = format!(
            r#"{{"jid":"g{id}","job":"note_run","args":[{id}],"queue":"safe","created_at":1,"enqueued_at":1}}"#
        );
        redis.cli(&[
            "RPUSH",
            &format!("gator:{{safe}}:inflight:{ghost}"),
            &payload,
        ]);
    }
    let worker = TestWorker::start(&redis.url(), Some("safe"), 2);
    wait_until("both orphans to run", Duration::from_secs(10), || async {
        ran(101) && ran(102)
    })
    .await;
    assert_eq!(
        redis.cli(&["ZSCORE", "gator:processes", ghost]),
        "",
        "the dead process is forgotten"
    );
    worker.stop().await;
    assert_eq!(in_flight_keys(&redis), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanly_stopped_worker_leaves_nothing_in_flight_and_deregisters() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("safe"), 4);
    client
        .dispatch_many((200..300).map(NoteRun::call))
        .await
        .unwrap();
    wait_until("the jobs to run", Duration::from_secs(10), || async {
        (200..300).all(ran)
    })
    .await;
    assert_eq!(redis.cli(&["ZCARD", "gator:processes"]), "1");
    worker.stop().await;
    assert_eq!(in_flight_keys(&redis), "");
    assert_eq!(redis.cli(&["ZCARD", "gator:processes"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_while_redis_is_stopped_fails_within_seconds_instead_of_hanging() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    redis.pause();
    let started = Instant::now();
    let result = NoteRun::call(1).dispatch_with(&client).await;
    let took = started.elapsed();
    redis.resume();
    assert!(result.is_err(), "a dispatch to a stopped Redis must fail");
    assert!(took < Duration::from_secs(10), "the error took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_carries_on_after_redis_is_killed_and_restarted() {
    let mut redis = RedisServer::start_with(ServerOptions {
        appendonly: true,
        ..ServerOptions::default()
    });
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("safe"), 2);
    NoteRun::call(401).dispatch_with(&client).await.unwrap();
    wait_until("the first job", Duration::from_secs(10), || async {
        ran(401)
    })
    .await;

    redis.kill();
    tokio::time::sleep(Duration::from_secs(2)).await; // the worker meets a dead Redis
    redis.restart();
    // The client reconnects on its own; the first command after the restart may still fail.
    let deadline = Instant::now() + Duration::from_secs(15);
    while NoteRun::call(402).dispatch_with(&client).await.is_err() {
        assert!(Instant::now() < deadline, "the client never reconnected");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_until(
        "a job after the restart",
        Duration::from_secs(20),
        || async { ran(402) },
    )
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_started_before_redis_keeps_trying_and_then_runs_jobs() {
    let mut redis = RedisServer::start();
    redis.stop();
    let worker = TestWorker::start(&redis.url(), Some("safe"), 2);
    tokio::time::sleep(Duration::from_secs(2)).await; // several failed connection attempts
    redis.restart();
    let client = client(&redis.url()).await;
    NoteRun::call(501).dispatch_with(&client).await.unwrap();
    wait_until(
        "the job once Redis is up",
        Duration::from_secs(20),
        || async { ran(501) },
    )
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_fetch_reply_was_lost_is_put_back_and_runs() {
    let redis = RedisServer::start();
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    config.queues = "safe".parse().unwrap();
    config.recovery_interval = Duration::from_millis(200);
    let worker = TestWorker::start_with(config);
    wait_until(
        "the worker to register",
        Duration::from_secs(10),
        || async { redis.cli(&["ZCARD", "gator:processes"]) == "1" },
    )
    .await;
    // What a fetch whose reply was lost leaves behind: a job in this live process's in-flight
    // list that none of its processors received.
    let process = redis.cli(&["ZRANGE", "gator:processes", "0", "0"]);
    let payload = r#"{"jid":"lost1","job":"note_run","args":[601],"queue":"safe","created_at":1,"enqueued_at":1}"#;
    redis.cli(&[
        "RPUSH",
        &format!("gator:{{safe}}:inflight:{process}"),
        payload,
    ]);

    wait_until(
        "the stranded job to run",
        Duration::from_secs(10),
        || async { ran(601) },
    )
    .await;
    worker.stop().await;
    assert_eq!(in_flight_keys(&redis), "");
}
