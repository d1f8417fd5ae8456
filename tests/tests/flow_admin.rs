//! `gator-worker queue ...` and `gator-worker limiter ...` against a real Redis: each setting
//! round-trips through `queue show --json`, bad input exits 1 with the reason and changes
//! nothing, and a sharded queue is refused.

use gator_tests::{RedisServer, client, run_cli};
use serde_json::Value;

fn cli(redis: &RedisServer, args: &[&str]) -> std::process::Output {
    run_cli(env!("CARGO_BIN_EXE_gator-test-worker"), &redis.url(), args)
}

fn ok(redis: &RedisServer, args: &[&str]) -> String {
    let output = cli(redis, args);
    assert!(output.status.success(), "gator-worker {args:?} failed");
    String::from_utf8(output.stdout).unwrap()
}

fn refused(redis: &RedisServer, args: &[&str]) -> String {
    let output = cli(redis, args);
    assert_eq!(
        output.status.code(),
        Some(1),
        "gator-worker {args:?} should fail"
    );
    String::from_utf8(output.stderr).unwrap()
}

fn show(redis: &RedisServer, queue: &str) -> Value {
    serde_json::from_str(&ok(redis, &["queue", "show", queue, "--json"])).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_setting_round_trips_through_show() {
    let redis = RedisServer::start();
    assert_eq!(show(&redis, "partner")["controlled"], false);
    assert!(ok(&redis, &["queue", "show", "partner"]).contains("plain"));

    ok(&redis, &["queue", "pause", "partner"]);
    ok(&redis, &["queue", "limit", "partner", "10"]);
    ok(&redis, &["queue", "share", "partner", "east", "40"]);
    ok(&redis, &["queue", "share", "partner", "--default", "30"]);
    ok(&redis, &["queue", "rate", "partner", "100/1s"]);
    ok(
        &redis,
        &[
            "queue",
            "rate",
            "partner",
            "5/2m burst 3",
            "--limiter",
            "bulk",
        ],
    );
    ok(&redis, &["queue", "aging", "partner", "30s"]);
    ok(&redis, &["queue", "fair", "partner", "acme", "3"]);
    ok(&redis, &["queue", "fair", "partner", "--default", "2"]);
    ok(&redis, &["queue", "order", "partner", "due"]);
    ok(
        &redis,
        &[
            "queue",
            "windows",
            "partner",
            "05:00-07:00",
            "22:00-02:00",
            "--tz",
            "Europe/Berlin",
        ],
    );
    let status = show(&redis, "partner");
    assert_eq!(status["controlled"], true);
    assert_eq!(status["paused"], true);
    assert_eq!(status["limit"], 10);
    assert_eq!(status["shares"]["east"], 40);
    assert_eq!(status["default_share"], 30);
    let rates: Vec<(String, String)> = status["rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["rate"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        rates.contains(&(String::new(), "100/1s".into())),
        "{rates:?}"
    );
    assert!(
        rates.contains(&("bulk".into(), "5/2m burst 3".into())),
        "{rates:?}"
    );
    assert_eq!(status["aging"], 30_000);
    assert_eq!(status["fair_weights"]["acme"], 3);
    assert_eq!(status["default_fair_weight"], 2);
    assert_eq!(status["order"], "due");
    assert_eq!(status["windows"], "05:00-07:00,22:00-02:00 Europe/Berlin");
    let text = ok(&redis, &["queue", "show", "partner"]);
    assert!(
        text.contains("PAUSED") && text.contains("0 of 10 units"),
        "{text}"
    );
    assert!(text.contains(r#"fair weight: key "acme" 3"#), "{text}");

    ok(&redis, &["queue", "resume", "partner"]);
    ok(&redis, &["queue", "limit", "partner", "--clear"]);
    ok(&redis, &["queue", "share", "partner", "east", "--clear"]);
    ok(&redis, &["queue", "rate", "partner", "--clear"]);
    ok(&redis, &["queue", "aging", "partner", "--clear"]);
    ok(&redis, &["queue", "fair", "partner", "acme", "--clear"]);
    ok(&redis, &["queue", "order", "partner", "priority"]);
    ok(&redis, &["queue", "windows", "partner", "--clear"]);
    let status = show(&redis, "partner");
    assert_eq!(status["paused"], false);
    assert_eq!(status["limit"], Value::Null);
    assert_eq!(status["shares"], serde_json::json!({}));
    assert_eq!(status["fair_weights"], serde_json::json!({}));
    assert_eq!(status["aging"], Value::Null);
    assert_eq!(status["order"], "priority");
    assert_eq!(status["windows"], Value::Null);
    assert_eq!(
        status["rates"].as_array().unwrap().len(),
        1,
        "only `bulk` is left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_the_reason_and_changes_nothing() {
    let redis = RedisServer::start();
    ok(&redis, &["queue", "limit", "q", "4"]);
    let before = show(&redis, "q");
    for (args, reason) in [
        (
            &["queue", "rate", "q", "nonsense"][..],
            "is not COUNT/INTERVAL",
        ),
        (
            &["queue", "share", "q", "east", "150"],
            "percentage from 1 to 100",
        ),
        (
            &["queue", "fair", "q", "acme", "101"],
            "weight is from 1 to 100",
        ),
        (&["queue", "limit", "q", "0"], "pause the queue instead"),
        (
            &["queue", "windows", "q", "25:00-26:00"],
            "is not HH:MM-HH:MM",
        ),
        (
            &[
                "queue",
                "windows",
                "q",
                "05:00-07:00",
                "--tz",
                "Mars/Olympus",
            ],
            "IANA zone",
        ),
        (
            &["queue", "order", "q", "sideways"],
            "neither `priority` nor `due`",
        ),
        (&["queue", "aging", "q", "soon"], "aging interval"),
        (&["queue", "pause", "no spaces"], "queue"),
        (&["limiter", "set", "email", "0/1s"], "at least one job"),
    ] {
        let stderr = refused(&redis, args);
        assert!(stderr.contains(reason), "{args:?}: {stderr}");
    }
    assert_eq!(show(&redis, "q"), before, "nothing changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_queue_is_refused() {
    let redis = RedisServer::start();
    ok(&redis, &["shards", "wide", "4"]);
    let stderr = refused(&redis, &["queue", "pause", "wide"]);
    assert!(stderr.contains("shards"), "{stderr}");
    assert_eq!(show(&redis, "wide")["controlled"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_limiters_are_set_listed_and_cleared() {
    let redis = RedisServer::start();
    ok(&redis, &["limiter", "set", "email", "100/1s"]);
    ok(&redis, &["limiter", "set", "sms", "10/1m burst 5"]);
    let list: Value = serde_json::from_str(&ok(&redis, &["limiter", "list", "--json"])).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["email", "sms"]);
    assert_eq!(list[1]["rate"], "10/1m burst 5");
    ok(&redis, &["limiter", "clear", "email"]);
    assert!(ok(&redis, &["limiter", "list"]).contains("1 shared limiters"));

    // The same through the API.
    let client = client(&redis.url()).await;
    gator_core::Admin::new(client.clone())
        .pause_queue("api")
        .await
        .unwrap();
    gator_core::Admin::new(client.clone())
        .set_queue_limit("api", Some(3))
        .await
        .unwrap();
    let status = gator_core::Admin::new(client.clone())
        .flow_status("api")
        .await
        .unwrap();
    assert!(status.paused);
    assert_eq!(status.limit, Some(3));
}

/// Jobs of this test file, run by an in-process worker (so the test also runs on a cluster,
/// `scripts/test-cluster`): each counts itself running in `RUNNING`, keeps the most in `PEAK`.
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static PEAK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static DONE: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

#[gator_core::job]
async fn flow_admin_probe(id: u64) {
    use std::sync::atomic::Ordering;
    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    PEAK.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    DONE.lock().unwrap().push(id);
}

/// On one server or a cluster: a limit holds, a pause holds, a shared limiter (on another
/// slot than its queues) spaces its jobs, and every job runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controls_hold_on_a_single_server_or_a_cluster() {
    use std::time::Duration;
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_core::Admin::new(client.clone())
        .set_queue_limit("fa", Some(2))
        .await
        .unwrap();
    gator_core::Admin::new(client.clone())
        .pause_queue("fb")
        .await
        .unwrap();
    gator_core::Admin::new(client.clone())
        .set_shared_rate("shared-api", Some("20/1s".parse().unwrap()))
        .await
        .unwrap();
    for id in 0..20 {
        FlowAdminProbe::call(id)
            .queue("fa")
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    for id in 100..110 {
        FlowAdminProbe::call(id)
            .queue("fb")
            .rate_limiter("shared-api")
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let worker = gator_tests::TestWorker::start(&redis.url(), Some("fa,fb"), 8);
    gator_tests::wait_until(
        "the limited queue drains",
        Duration::from_secs(20),
        || async { DONE.lock().unwrap().len() >= 20 },
    )
    .await;
    assert!(
        PEAK.load(std::sync::atomic::Ordering::SeqCst) <= 2,
        "the limit of 2 held"
    );
    assert!(
        DONE.lock().unwrap().iter().all(|id| *id < 100),
        "nothing ran on the paused queue"
    );
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("fb")
            .await
            .unwrap(),
        10
    );
    gator_core::Admin::new(client.clone())
        .resume_queue("fb")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    gator_tests::wait_until(
        "the paused queue drains",
        Duration::from_secs(20),
        || async { DONE.lock().unwrap().len() >= 30 },
    )
    .await;
    // 10 starts at 20 a second: 9 intervals of 50 ms at least.
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    let mut done = DONE.lock().unwrap().clone();
    done.sort_unstable();
    let expected: Vec<u64> = (0..20).chain(100..110).collect();
    assert_eq!(done, expected, "every job ran once");
    worker.stop().await;
}

#[gator_core::job(queue = "parkq")]
async fn parked_job(_n: u64) {}

/// `queues` and `queue show` give one figure for the jobs parked on a controlled queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_and_queue_show_agree_on_parked() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    ok(&redis, &["queue", "pause", "parkq"]);
    for (n, key) in ["a", "a", "b"].iter().enumerate() {
        ParkedJob::call(n as u64)
            .limit_key(*key)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let queues: Value = serde_json::from_str(&ok(&redis, &["queues", "--json"])).unwrap();
    let listed = queues
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "parkq")
        .expect("the queue is listed")
        .clone();
    let shown = show(&redis, "parkq");
    let by_key: u64 = shown["parked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["jobs"].as_u64().unwrap())
        .sum();
    assert_eq!(listed["parked"], 3, "{listed}");
    assert_eq!(by_key, 3, "{shown}");
    let text = ok(&redis, &["queue", "show", "parkq"]);
    assert!(text.contains("parked: 3 jobs"), "{text}");
}
