//! Never lose a job: in-flight jobs of dead processes come back, a clean stop leaves nothing in
//! flight, and Redis going away is survived by workers and reported promptly to clients.

use gator_core::job;
use gator_tests::{
    RedisServer, ServerOptions, TestWorker, client, spawn_worker_process,
    spawn_worker_process_with, terminate, wait_until,
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

/// Starts a worker process on `default` with `extra` arguments, waits until its `mark_after`
/// job started, SIGKILLs it, and checks that the job is still recorded in flight.
fn kill_a_worker_mid_job(redis: &RedisServer, extra: &[&str]) {
    redis.cli(&["SADD", "gator:queues", "default"]);
    redis.cli(&[
        "RPUSH",
        "gator:{default}:queue",
        r#"{"jid":"s1","job":"mark_after","args":[1500],"queue":"default","created_at":1,"enqueued_at":1}"#,
    ]);
    let mut worker = spawn_worker_process_with(
        env!("CARGO_BIN_EXE_gator-test-worker"),
        &redis.url(),
        "default",
        2,
        extra,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while redis.cli(&["GET", "test:started"]) != "s1" {
        assert!(Instant::now() < deadline, "the job never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    worker.kill().unwrap(); // SIGKILL: no shutdown code runs
    worker.wait().unwrap();
    let key = in_flight_keys(redis);
    assert_ne!(
        key, "",
        "the killed worker's job must still be recorded in flight"
    );
    assert_eq!(redis.cli(&["LLEN", &key]), "1");
    assert_eq!(redis.cli(&["LLEN", "gator:{default}:queue"]), "0");
}

/// Waits until the `mark_after` job finished (again).
fn wait_for_finish(redis: &RedisServer, deadline: Duration, what: &str) {
    let until = Instant::now() + deadline;
    while redis.cli(&["GET", "test:finished"]) != "s1" {
        assert!(Instant::now() < until, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_job_in_flight_in_a_killed_worker_runs_again_once_its_lease_expires() {
    let redis = RedisServer::start();
    kill_a_worker_mid_job(&redis, &["--lease", "4s"]);
    // A new worker on the same host, with another pid or the same one (a container's pid 1):
    // it cannot tell its predecessor is dead until the lease says so, and then it recovers.
    let mut other = spawn_worker_process(
        env!("CARGO_BIN_EXE_gator-test-worker"),
        &redis.url(),
        "default",
        2,
    );
    wait_for_finish(
        &redis,
        Duration::from_secs(20),
        "the recovered job never finished",
    );
    assert!(terminate(&mut other).success());
    assert_eq!(in_flight_keys(&redis), "", "nothing left in flight");
}

#[test]
fn a_worker_restarted_under_its_worker_id_recovers_its_predecessor_at_once() {
    let redis = RedisServer::start();
    // A lease far longer than the test may wait: only the takeover can bring the job back.
    let args = ["--lease", "120s", "--worker-id", "pod-7"];
    kill_a_worker_mid_job(&redis, &args);
    let mut restarted = spawn_worker_process_with(
        env!("CARGO_BIN_EXE_gator-test-worker"),
        &redis.url(),
        "default",
        2,
        &args,
    );
    wait_for_finish(
        &redis,
        Duration::from_secs(20),
        "the restarted worker did not take over its predecessor's job",
    );
    assert!(terminate(&mut restarted).success());
    assert_eq!(in_flight_keys(&redis), "", "nothing left in flight");
}

/// A process that never registered anywhere but in `queue`'s lease set, holding `ids` in flight,
/// its lease expiring `expires_in_ms` from now on Redis's clock (negative: already expired).
async fn ghost(redis: &RedisServer, queue: &str, id: &str, expires_in_ms: i64, ids: &[u64]) {
    let client = client(&redis.url()).await;
    let now = client.redis_time().await.unwrap() as i64;
    redis.cli(&[
        "ZADD",
        &format!("gator:{{{queue}}}:leases"),
        &(now + expires_in_ms).to_string(),
        id,
    ]);
    redis.cli(&["SADD", "gator:queues", queue]);
    for n in ids {
        let payload = format!(
            r#"{{"jid":"g{n}","job":"note_run","args":[{n}],"queue":"{queue}","created_at":1,"enqueued_at":1}}"#
        );
        redis.cli(&[
            "RPUSH",
            &format!("gator:{{{queue}}}:inflight:{id}"),
            &payload,
        ]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_flight_jobs_of_a_process_whose_lease_expired_are_recovered_and_a_live_lease_is_left_alone()
 {
    let redis = RedisServer::start();
    // Two processes on another host, neither in the process registry: one whose lease ran out
    // a minute ago, one whose lease holds for another minute (it is alive, just quiet).
    ghost(
        &redis,
        "safe",
        "elsewhere:4242:abcdef",
        -60_000,
        &[101, 102],
    )
    .await;
    ghost(&redis, "safe", "elsewhere:4243:fedcba", 60_000, &[103]).await;
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    config.queues = "safe".parse().unwrap();
    config.recovery_interval = Duration::from_millis(200);
    let worker = TestWorker::start_with(config);
    wait_until("both orphans to run", Duration::from_secs(10), || async {
        ran(101) && ran(102)
    })
    .await;
    // Many recovery passes later, the live process's job is still its own.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!ran(103), "a job of a process with a live lease ran");
    assert_eq!(
        redis.cli(&["LLEN", "gator:{safe}:inflight:elsewhere:4243:fedcba"]),
        "1"
    );
    assert_eq!(
        redis.cli(&["LLEN", "gator:{safe}:inflight:elsewhere:4242:abcdef"]),
        "0"
    );
    worker.stop().await;
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
    assert_eq!(redis.cli(&["ZCARD", "gator:{safe}:leases"]), "1");
    worker.stop().await;
    assert_eq!(in_flight_keys(&redis), "");
    assert_eq!(redis.cli(&["ZCARD", "gator:processes"]), "0");
    assert_eq!(
        redis.cli(&["ZCARD", "gator:{safe}:leases"]),
        "0",
        "a clean stop gives up its leases"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_while_redis_is_stopped_fails_within_seconds_instead_of_hanging() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    redis.pause();
    let started = Instant::now();
    let result = NoteRun::call(1).through(&client).dispatch().await;
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
    NoteRun::call(401)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the first job", Duration::from_secs(10), || async {
        ran(401)
    })
    .await;

    redis.kill();
    tokio::time::sleep(Duration::from_secs(2)).await; // the worker meets a dead Redis
    redis.restart();
    // The client reconnects on its own; the first command after the restart may still fail.
    let deadline = Instant::now() + Duration::from_secs(15);
    while NoteRun::call(402)
        .through(&client)
        .dispatch()
        .await
        .is_err()
    {
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
    let mut redis = RedisServer::start_single();
    redis.stop();
    let worker = TestWorker::start(&redis.url(), Some("safe"), 2);
    tokio::time::sleep(Duration::from_secs(2)).await; // several failed connection attempts
    redis.restart();
    let client = client(&redis.url()).await;
    NoteRun::call(501)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
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
