//! Scheduled jobs: they start close to their due time, and a fleet promotes each exactly once.

use gator_core::payload::now_ms;
use gator_core::{Admin, Cancellation, JobStatus, SetKind, job};
use gator_tests::{
    RedisServer, TestWorker, WorkerProcess, client, spawn_worker_process, terminate, wait_until,
};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

static LATENESS_MS: Mutex<Vec<i64>> = Mutex::new(Vec::new());

#[job(queue = "timed")]
async fn on_time(due_ms: u64) {
    LATENESS_MS
        .lock()
        .unwrap()
        .push(now_ms() as i64 - due_ms as i64);
}

#[job(queue = "later")]
async fn later(_n: u64) {}

/// A job scheduled for later keeps its record in a field of its bucket, not a key (see "Job
/// status" in docs/wire-format.md): the record still leads every action by jid to the job,
/// past the 500 first entries a job without a record is looked for among.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_scheduled_for_later_keep_no_key_and_every_action_finds_them() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let admin = Admin::new(client.clone());
    let mut jids = Vec::new();
    for n in 0..520u64 {
        let hours = Later::call(n).after(Duration::from_secs(3600 + n));
        jids.push(hours.through(&client).dispatch().await.unwrap());
    }
    let keys = redis.cli(&["--scan", "--pattern", "gator:{later}:job:*"]);
    assert_eq!(
        keys.trim(),
        "",
        "no record key for a job scheduled for later"
    );
    let due = client.redis_time().await.unwrap() + 3_600_000 + 519_000;
    match client.status(&jids[519]).await.unwrap() {
        JobStatus::Scheduled { at } => {
            let at = at.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
            assert!(due.abs_diff(at) < 60_000, "due {at}, expected about {due}");
        }
        other => panic!("the last job reads {other:?}"),
    }
    let (run, cancel, delete) = (&jids[517], &jids[518], &jids[519]);
    assert_eq!(client.cancel(cancel).await.unwrap(), Cancellation::Removed);
    assert!(matches!(
        client.status(cancel).await.unwrap(),
        JobStatus::Cancelled { .. }
    ));
    let later = Some("later");
    assert!(
        admin
            .delete_job(SetKind::Scheduled, later, delete)
            .await
            .unwrap()
    );
    assert_eq!(client.status(delete).await.unwrap(), JobStatus::Unknown);
    assert!(admin.run_now(SetKind::Scheduled, later, run).await.unwrap());
    assert_eq!(client.status(run).await.unwrap(), JobStatus::Queued);
    let worker = TestWorker::start(&redis.url(), Some("later"), 2);
    wait_until("the job run now", Duration::from_secs(10), || async {
        matches!(client.status(run).await.unwrap(), JobStatus::Done { .. })
    })
    .await;
    worker.stop().await;
    assert_eq!(admin.set_len(SetKind::Scheduled, later).await.unwrap(), 517);
    assert!(matches!(
        client.status(&jids[0]).await.unwrap(),
        JobStatus::Scheduled { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_due_one_to_three_seconds_ahead_start_within_a_second_of_their_due_time() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // The default poll interval: the bound documented in the README is about what users get.
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    config.queues = "timed".parse().unwrap();
    let worker = TestWorker::start_with(config);
    for delay_ms in [1000u64, 1500, 2000, 2500, 3000] {
        let due = SystemTime::now() + Duration::from_millis(delay_ms);
        let due_ms = due.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        OnTime::call(due_ms)
            .at(due)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    wait_until(
        "all five scheduled jobs",
        Duration::from_secs(10),
        || async { LATENESS_MS.lock().unwrap().len() == 5 },
    )
    .await;
    let lateness = LATENESS_MS.lock().unwrap().clone();
    eprintln!("lateness after the due time, ms: {lateness:?}");
    for late in &lateness {
        assert!(
            (0..1000).contains(late),
            "a job started {late} ms after its due time: {lateness:?}"
        );
    }
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_worker_processes_run_5000_jobs_due_at_one_instant_exactly_once_each() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut workers: Vec<WorkerProcess> = (0..3)
        .map(|_| {
            spawn_worker_process(
                env!("CARGO_BIN_EXE_gator-test-worker"),
                &redis.url(),
                "fleet",
                10,
            )
        })
        .collect();
    wait_until(
        "three registered worker processes",
        Duration::from_secs(20),
        || async { redis.cli(&["ZCARD", "gator:processes"]) == "3" },
    )
    .await;

    let due = SystemTime::now() + Duration::from_secs(3);
    let due_ms = due.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let jobs = 5000u64;
    // The queue is known first (a global key, on its own), then one MULTI in the queue's
    // slot: the workers see every job at once, all due at the same instant.
    redis::cmd("SADD")
        .arg("gator:queues")
        .arg("fleet")
        .query_async::<()>(&mut client.connection())
        .await
        .unwrap();
    let mut pipe = redis::pipe();
    pipe.atomic();
    for id in 0..jobs {
        // A job whose wire name only the worker binary knows, sent by name like any producer.
        let payload = serde_json::json!({
            "jid": format!("fleet-{id}"), "job": "count_run", "args": [id], "queue": "fleet",
            "created_at": now_ms(), "enqueued_at": now_ms(), "attempt": 0
        });
        pipe.zadd("gator:{fleet}:scheduled", payload.to_string(), due_ms)
            .ignore();
    }
    pipe.query_async::<()>(&mut client.connection())
        .await
        .unwrap();
    assert!(
        SystemTime::now() < due,
        "enqueueing took too long for the test to mean anything"
    );

    wait_until("every job to run", Duration::from_secs(60), || async {
        redis.cli(&["HLEN", "test:runs"]) == jobs.to_string()
            && redis.cli(&["LLEN", "gator:{fleet}:queue"]) == "0"
            && redis.cli(&["ZCARD", "gator:{fleet}:scheduled"]) == "0"
    })
    .await;
    // Let any duplicate that was still in flight land before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let counts: Vec<u64> = redis::cmd("HVALS")
        .arg("test:runs")
        .query_async(&mut client.connection())
        .await
        .unwrap();
    assert_eq!(counts.len() as u64, jobs);
    let doubled = counts.iter().filter(|c| **c != 1).count();
    assert_eq!(doubled, 0, "{doubled} jobs ran more than once");
    for worker in &mut workers {
        assert!(terminate(worker).success());
    }
}

/// A job due later whose time falls outside its windows is scheduled at the next opening after
/// that time, whether given a time or a delay; one due inside a window keeps its time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_due_later_outside_its_windows_is_scheduled_at_the_next_opening() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let now = client.redis_time().await.unwrap() as i64;
    let hhmm = |ms: i64| {
        let min = (ms / 60_000).rem_euclid(24 * 60);
        format!("{:02}:{:02}", min / 60, min % 60)
    };
    // Opens in 2 hours for an hour (UTC wall clock, across midnight if need be).
    let window = format!("{}-{}", hhmm(now + 7_200_000), hhmm(now + 10_800_000));
    let windows = gator_core::flow::Windows::parse(&[window.as_str()], None).unwrap();
    let open = windows.next_start(now).unwrap();
    let job = |n: u64| OnTime::call(n).windows([window.as_str()], Some("UTC"));
    let hour = Duration::from_secs(3600);
    let by_delay = job(1).after(hour).through(&client).dispatch();
    let by_delay = by_delay.await.unwrap();
    let by_time = job(2).at(SystemTime::now() + hour).through(&client);
    let by_time = by_time.dispatch().await.unwrap();
    // Inside the window: it keeps its own time.
    let inside = UNIX_EPOCH + Duration::from_millis(open as u64 + 1_800_000);
    let kept = job(3).at(inside).through(&client).dispatch().await.unwrap();
    // Each job's due time, as its status says it (a job due beyond the horizon waits in its
    // minute's list, not in the scheduled set: store::later).
    let due = async |jid: &str| -> i64 {
        match client.status(jid).await.unwrap() {
            JobStatus::Scheduled { at } => {
                at.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
            }
            other => panic!("{jid} reads {other:?}"),
        }
    };
    let (by_delay, by_time, kept) = (due(&by_delay).await, due(&by_time).await, due(&kept).await);
    let score = |due: &i64| *due;
    assert_eq!(score(&by_delay), open, "a delay into a closed window");
    assert_eq!(score(&by_time), open, "a time in a closed window");
    assert_eq!(score(&kept), open + 1_800_000, "a time inside the window");
}
