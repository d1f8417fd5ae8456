//! Expiring jobs: a job not started by its deadline never runs, wherever it waited (its
//! queue, the scheduled set, the retry set, a controlled queue's parking); it ends `expired`,
//! kept in the dead set or dropped. Deadlines are set and decided on Redis's clock, whatever
//! the producer's or the worker's clock says. Every job here runs in real worker processes
//! (the test worker binary), against a real redis-server.

#[path = "support/router.rs"]
mod router;
use gator_core::expiry::OnExpire;
use gator_core::flow::FlowSetting;
use gator_core::{Client, JobStatus, job};
use gator_tests::{
    RedisServer, WorkerCommand, WorkerProcess, client, libfaketime, run_cli, set_flow,
    spawn_worker_process_with, wait_until,
};
use std::time::{Duration, SystemTime};

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

// The worker binary runs these; here they give typed calls with the same wire names, and the
// dispatch-side options (`expires_in`, `on_expire`) under test.

/// Records its start on Redis's clock in `test:started_at` under `id`.
#[job(name = "note_time", expires_in = "1s")]
async fn note_time(_id: u64) {}

/// The same job, dropped once expired.
#[job(name = "note_time", expires_in = "1s", on_expire = "drop")]
async fn note_time_dropped(_id: u64) {}

/// Counts its run in `test:runs`, fails, and retries 2 s later: past its 1 s deadline.
#[job(name = "fail_then_wait", expires_in = "1s")]
async fn fail_then_wait(_id: u64) {}

/// Counts its run in `test:runs` (no deadline).
#[job(name = "count_run")]
async fn count_run(_id: u64) {}

/// Counts its run in `test:runs`, then sleeps.
#[job(name = "sleepy")]
async fn sleepy(_id: u64, _millis: u64) {}

fn worker(redis: &RedisServer, queues: &str) -> WorkerProcess {
    spawn_worker_process_with(
        WORKER,
        &redis.url(),
        queues,
        2,
        &["--poll-interval", "200ms"],
    )
}

/// Waits until Redis's clock is past `deadline` (ms).
async fn wait_past(client: &Client, deadline: u64) {
    wait_until(
        "Redis's clock past the deadline",
        Duration::from_secs(10),
        || async { client.redis_time().await.unwrap() > deadline },
    )
    .await;
}

async fn wait_for_expired(client: &Client, jid: &str) -> JobStatus {
    wait_until(
        &format!("{jid} expired"),
        Duration::from_secs(20),
        || async { client.status(jid).await.unwrap().name() == "expired" },
    )
    .await;
    client.status(jid).await.unwrap()
}

/// The `expires_at` of the payload at the head of `queue`'s list.
fn queued_deadline(redis: &RedisServer, queue: &str) -> u64 {
    let raw = redis.cli(&["LINDEX", &format!("gator:{{{queue}}}:queue"), "0"]);
    let payload: serde_json::Value = serde_json::from_str(&raw).expect("a payload");
    payload["expires_at"].as_u64().expect("an expires_at")
}

fn started(redis: &RedisServer, id: u64) -> bool {
    redis.cli(&["HEXISTS", "test:started_at", &id.to_string()]) == "1"
}

fn runs(redis: &RedisServer, id: u64) -> String {
    redis.cli(&["HGET", "test:runs", &id.to_string()])
}

fn dead_entries(redis: &RedisServer, queue: &str) -> String {
    redis.cli(&["ZRANGE", &format!("gator:{{{queue}}}:dead"), "0", "-1"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_past_its_deadline_when_a_worker_starts_is_expired_and_never_runs() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let before = client.redis_time().await.unwrap();
    let jid = NoteTime::call(1).through(&client).dispatch().await.unwrap();
    let after = client.redis_time().await.unwrap();
    CountRun::call(2).through(&client).dispatch().await.unwrap();
    // The deadline is Redis's clock at dispatch plus the job's 1 s.
    let deadline = queued_deadline(&redis, "default");
    assert!(
        (before + 1000..=after + 1000).contains(&deadline),
        "{before} {deadline} {after}"
    );
    assert_eq!(client.status(&jid).await.unwrap(), JobStatus::Queued);
    wait_past(&client, deadline).await;

    let _worker = worker(&redis, "default");
    let status = wait_for_expired(&client, &jid).await;
    let JobStatus::Expired {
        attempts,
        deadline: recorded,
        kept,
        ..
    } = status
    else {
        panic!("expected expired, got {status:?}")
    };
    assert_eq!((attempts, kept), (0, true));
    assert_eq!(gator_core::clock::to_ms(recorded), deadline);
    wait_until(
        "the job without a deadline",
        Duration::from_secs(10),
        || async { runs(&redis, 2) == "1" },
    )
    .await;
    assert!(!started(&redis, 1), "the expired job never ran");
    let dead = dead_entries(&redis, "default");
    assert!(dead.contains(&jid), "{dead}");
    assert!(
        dead.contains("expired: not started by its deadline"),
        "{dead}"
    );
    // The CLI shows it.
    let show = run_cli(WORKER, &redis.url(), &["job", "show", &jid]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("expired") && text.contains("kept in the dead set"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_job_due_after_its_deadline_expires_and_one_due_before_runs() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _worker = worker(&redis, "default");
    let late = NoteTime::call(3)
        .after(Duration::from_secs(2))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let in_time = NoteTime::call(4)
        .expires_in(Duration::from_secs(30))
        .after(Duration::from_millis(500))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_for_expired(&client, &late).await;
    wait_until("the job due in time", Duration::from_secs(10), || async {
        client.status(&in_time).await.unwrap().name() == "done"
    })
    .await;
    assert!(!started(&redis, 3), "the expired job never ran");
    assert!(started(&redis, 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_due_after_the_deadline_never_runs() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _worker = worker(&redis, "default");
    let jid = FailThenWait::call(5)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let status = wait_for_expired(&client, &jid).await;
    assert!(
        matches!(
            status,
            JobStatus::Expired {
                attempts: 1,
                kept: true,
                ..
            }
        ),
        "{status:?}"
    );
    assert_eq!(
        runs(&redis, 5),
        "1",
        "its first attempt ran, its retry never did"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_parked_by_a_concurrency_limit_past_its_deadline_never_runs() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    set_flow(&client, "explim", &[FlowSetting::Limit(Some(1))]).await;
    let _worker = worker(&redis, "explim");
    Sleepy::call(6, 2500)
        .queue("explim")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until(
        "the sleeper holds the limit",
        Duration::from_secs(10),
        || async { runs(&redis, 6) == "1" },
    )
    .await;
    let parked = NoteTime::call(7)
        .queue("explim")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(client.status(&parked).await.unwrap(), JobStatus::Queued);
    wait_for_expired(&client, &parked).await;
    assert!(!started(&redis, 7), "the parked job never ran");
    assert!(dead_entries(&redis, "explim").contains(&parked));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_says_drop_is_not_kept_and_its_record_says_expired() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = NoteTimeDropped::call(8)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert!(
        redis
            .cli(&["LINDEX", "gator:{default}:queue", "0"])
            .contains(r#""on_expire":"drop""#)
    );
    wait_past(&client, queued_deadline(&redis, "default")).await;
    let _worker = worker(&redis, "default");
    let status = wait_for_expired(&client, &jid).await;
    assert!(
        matches!(status, JobStatus::Expired { kept: false, .. }),
        "{status:?}"
    );
    assert!(!started(&redis, 8));
    assert_eq!(redis.cli(&["ZCARD", "gator:{default}:dead"]), "0");
    assert_eq!(redis.cli(&["LLEN", "gator:{default}:queue"]), "0");
    // A dispatch's builder can also say it.
    let kept = NoteTimeDropped::call(9).on_expire(OnExpire::Dead);
    assert_eq!(kept.expiry().map(|e| e.on_expire), Some(OnExpire::Dead));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_past_the_horizon_and_unparsable_deadlines_are_refused_with_a_reason() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let refused = |r: gator_core::Result<String>| r.expect_err("refused").to_string();
    let zero = NoteTime::call(1).expires_in(Duration::ZERO);
    assert!(refused(zero.through(&client).dispatch().await).contains("more than zero"));
    let years = NoteTime::call(1).expires_in(Duration::from_secs(6 * 365 * 86_400));
    assert!(refused(years.through(&client).dispatch().await).contains("5 years"));
    let far = SystemTime::now() + Duration::from_secs(10 * 365 * 86_400);
    let at = NoteTime::call(1).expires_at(far);
    assert!(refused(at.through(&client).dispatch().await).contains("5 years ahead"));
    assert_eq!(
        redis.cli(&["LLEN", "gator:{default}:queue"]),
        "0",
        "nothing stored"
    );
    // The command line, as the HTTP API, reads the duration notation.
    for bad in ["-5m", "soon", "0s"] {
        let out = run_cli(
            WORKER,
            &redis.url(),
            &[
                "enqueue",
                "note_time",
                "[1]",
                "--force",
                &format!("--expires-in={bad}"),
            ],
        );
        assert!(!out.status.success(), "{bad} refused");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("expires_in"),
            "{bad}"
        );
    }
}

/// A producer's clock decides nothing: one 10 minutes behind (which, trusting itself, would
/// write a deadline already past) and one 10 minutes ahead (which would write one 10 minutes
/// late) both write Redis's clock plus the time to live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_follows_redis_time_whatever_the_producers_clock_says() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let enqueue = |offset: &str, id: &str, ttl: &str| {
        let out = std::process::Command::new(WORKER)
            .env("LD_PRELOAD", libfaketime())
            .env("FAKETIME", offset)
            .env("FAKETIME_DONT_RESET", "1")
            .args(["--redis-url", &redis.url(), "enqueue", "note_time"])
            .args([&format!("[{id}]"), "--force", "--expires-in", ttl])
            .output()
            .expect("the CLI runs");
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.trim().rsplit(' ').next().expect("a jid").to_owned()
    };
    let behind = enqueue("-10m", "10", "60s");
    let ahead = enqueue("+10m", "11", "1s");
    let now = client.redis_time().await.unwrap();
    let raw = redis.cli(&["LRANGE", "gator:{default}:queue", "0", "-1"]);
    for line in raw.lines() {
        let payload: serde_json::Value = serde_json::from_str(line).expect("a payload");
        let deadline = payload["expires_at"].as_u64().expect("an expires_at");
        assert!(
            deadline <= now + 60_000 && deadline + 60_000 > now,
            "{deadline} vs {now}"
        );
    }
    wait_until(
        "the short deadline past",
        Duration::from_secs(10),
        || async { client.redis_time().await.unwrap() > now + 1000 },
    )
    .await;
    // A worker whose clock runs 10 minutes behind still expires the job on Redis's clock.
    let _worker = WorkerCommand::new(WORKER, &redis.url(), "default")
        .args(&["--poll-interval", "200ms"])
        .clock_offset("-10m")
        .spawn();
    wait_for_expired(&client, &ahead).await;
    wait_until("the job in time", Duration::from_secs(10), || async {
        client.status(&behind).await.unwrap().name() == "done"
    })
    .await;
    assert!(started(&redis, 10) && !started(&redis, 11));
}

/// The HTTP API takes `expires_in` (and `on_expire`), refuses bad ones with a 400 saying why,
/// and shows an expired job's state, deadline and reason; the dashboard's job page and dead
/// set show it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_api_takes_expires_in_and_shows_the_expired_job() {
    use serde_json::json;
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let app = gator_web::router(
        client.clone(),
        gator_web::WebConfig::new().auth_token(router::TOKEN),
    );
    let path = "/api/queues/default/jobs";
    for (bad, why) in [
        (json!({"expires_in": "0s"}), "more than zero"),
        (json!({"expires_in": "-5m"}), "not a duration"),
        (json!({"expires_in": "soon"}), "not a duration"),
        (json!({"expires_in": "6000d"}), "5 years"),
        (json!({"expires_in": "1m", "on_expire": "keep"}), "\"drop\""),
        (json!({"on_expire": "drop"}), "needs \"expires_in\""),
    ] {
        let mut body = json!({"job": "note_time", "args": [12], "force": true});
        body.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        let (status, answer) = router::call(&app, "POST", path, Some(body)).await;
        assert_eq!(status, 400, "{bad}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains(why), "{bad}: {answer}");
    }
    let (status, answer) = router::call(
        &app,
        "POST",
        path,
        Some(json!({"job": "note_time", "args": [12], "force": true, "expires_in": "1s"})),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    let jid = answer["jid"].as_str().unwrap().to_owned();
    wait_past(&client, queued_deadline(&redis, "default")).await;
    let _worker = worker(&redis, "default");
    wait_for_expired(&client, &jid).await;
    assert!(!started(&redis, 12));
    let (_, job) = router::call(&app, "GET", &format!("/api/jobs/{jid}"), None).await;
    assert_eq!(job["status"]["state"], "expired", "{job}");
    assert_eq!(job["status"]["kept"], true, "{job}");
    assert!(job["status"]["deadline_ms"].is_u64(), "{job}");
    let (_, dead) = router::call(&app, "GET", "/api/sets/dead", None).await;
    assert!(
        dead.to_string()
            .contains("expired: not started by its deadline"),
        "{dead}"
    );
}
