//! The autoscaling signal (`Admin::scaling`, `GET /api/scaling`, the `--metrics-bind` gauges,
//! `gator-worker scaling`) against a real redis-server and real worker processes: backlog and
//! latency grow while no worker serves a queue and drop once one does; busy and capacity
//! follow a live worker and drop to 0 once it is killed and its lease has expired, its jobs
//! then counted as orphaned; a sharded queue is one row; the API serves KEDA's shape behind the
//! dashboard's auth.
#![allow(clippy::unwrap_used)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use gator_core::Admin;
use gator_core::admin::{QueueScaling, ScalingPolicy};
use gator_core::job;
use gator_tests::{RedisServer, WorkerCommand, client, run_cli, wait_until};
use serde_json::Value;
use std::time::Duration;
use tower::ServiceExt;

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");
const WAIT: Duration = Duration::from_secs(30);

/// The test worker's jobs, under the same wire names.
#[job]
async fn count_run(id: u64) {
    let _ = id;
}

#[job]
async fn sleepy(id: u64, millis: u64) {
    let _ = (id, millis);
}

/// The signal of `default` (a row of zeros if it is not known yet).
async fn default_row(admin: &Admin) -> Option<QueueScaling> {
    let mut scaling = admin.scaling(ScalingPolicy::default()).await.unwrap();
    scaling.queues.remove("default")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backlog_and_latency_grow_while_no_worker_serves_a_queue_and_drop_when_one_does() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let admin = Admin::new(client.clone());
    for id in 0..3 {
        CountRun::call(id)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let first = default_row(&admin).await.unwrap();
    assert_eq!(first.backlog, 3);
    assert_eq!((first.busy, first.capacity, first.workers), (0, 0, 0));
    // No worker and no history: a slot per waiting job, so one worker.
    assert_eq!(first.suggested_workers, 1);
    wait_until("the latency to grow past a second", WAIT, || async {
        default_row(&admin).await.unwrap().latency_seconds >= 1.0
    })
    .await;
    let later = default_row(&admin).await.unwrap();
    assert!(later.latency_seconds > first.latency_seconds, "{later:?}");
    CountRun::call(3).through(&client).dispatch().await.unwrap();
    assert_eq!(default_row(&admin).await.unwrap().backlog, 4);

    let _worker = WorkerCommand::new(WORKER, &redis.url(), "default").spawn();
    wait_until("the worker to drain the queue", WAIT, || async {
        let row = default_row(&admin).await.unwrap();
        row.backlog == 0 && row.latency_seconds == 0.0
    })
    .await;
    wait_until("the throughput to show the jobs that ran", WAIT, || async {
        default_row(&admin).await.unwrap().throughput > 0.0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_and_capacity_follow_a_live_worker_and_drop_to_zero_once_its_lease_expires() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let admin = Admin::new(client.clone());
    let mut worker = WorkerCommand::new(WORKER, &redis.url(), "default")
        .args(&["--concurrency", "4", "--lease", "4s"])
        .spawn();
    for id in 0..2 {
        Sleepy::call(id, 120_000)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    wait_until("busy 2 of capacity 4 on one worker", WAIT, || async {
        default_row(&admin)
            .await
            .is_some_and(|r| (r.busy, r.capacity, r.workers) == (2, 4, 1))
    })
    .await;
    let row = default_row(&admin).await.unwrap();
    assert_eq!((row.backlog, row.orphaned), (0, 0));
    assert!(row.suggested_workers >= 1, "{row:?}");

    worker.0.kill().unwrap();
    worker.0.wait().unwrap();
    wait_until(
        "busy and capacity to drop once the lease expired",
        WAIT,
        || async {
            let row = default_row(&admin).await.unwrap();
            (row.busy, row.capacity, row.workers) == (0, 0, 0)
        },
    )
    .await;
    // Nobody recovers the dead worker's jobs but a live worker: they count as waiting, and a
    // worker is still suggested.
    let row = default_row(&admin).await.unwrap();
    assert_eq!(row.orphaned, 2, "{row:?}");
    assert_eq!(row.suggested_workers, 1, "{row:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_queue_is_one_row_and_its_worker_counts_once() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let admin = Admin::new(client.clone());
    admin.set_shards("default", 3).await.unwrap();
    for id in 0..6 {
        CountRun::call(id)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let scaling = admin.scaling(ScalingPolicy::default()).await.unwrap();
    let names: Vec<&String> = scaling.queues.keys().collect();
    assert_eq!(names, ["default"], "one row for the sharded queue");
    let row = &scaling.queues["default"];
    assert_eq!((row.backlog, row.shards), (6, 3), "{row:?}");

    let _worker = WorkerCommand::new(WORKER, &redis.url(), "default")
        .args(&["--concurrency", "4"])
        .spawn();
    for id in 0..3 {
        Sleepy::call(id, 120_000)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    // Three jobs on three shards, one process serving them all: one worker of 4 slots.
    wait_until("busy 3 of capacity 4 on one worker", WAIT, || async {
        default_row(&admin)
            .await
            .is_some_and(|r| (r.busy, r.capacity, r.workers, r.backlog) == (3, 4, 1, 0))
    })
    .await;
}

/// `GET path` from the router as JSON (`Null` if the body is not JSON), with `auth` as the
/// `Authorization` header if given.
async fn api(app: &axum::Router, path: &str, auth: Option<&str>) -> (StatusCode, Value) {
    let (status, text) = api_text(app, path, auth).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_scaling_serves_the_shape_keda_reads_behind_the_dashboards_auth() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    for id in 0..25 {
        CountRun::call(id)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let config = gator_web::WebConfig::new().auth_token("sc4ling-token-for-keda");
    let app = gator_web::router(client.clone(), config);
    let bearer = Some("Bearer sc4ling-token-for-keda");

    let (status, _) = api(&app, "/api/scaling", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = api(&app, "/api/scaling?target_latency=10s", bearer).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["target_latency_seconds"], 10.0);
    // What `valueLocation: queues.default.suggested_workers` finds: 25 waiting, no worker,
    // no history: a slot each, 10 a worker.
    let queue = &body["queues"]["default"];
    assert_eq!(queue["suggested_workers"], 3, "{body}");
    assert_eq!(queue["backlog"], 25);
    assert_eq!(queue["basis"], "fallback");
    for field in [
        "latency_seconds",
        "busy",
        "capacity",
        "workers",
        "throughput",
    ] {
        assert!(queue[field].is_number(), "no {field} in {body}");
    }
    let (_, capped) = api(&app, "/api/scaling?max_workers=2", bearer).await;
    assert_eq!(capped["queues"]["default"]["suggested_workers"], 2);
    for bad in [
        "?target_latency=soon",
        "?target_latency=10ms",
        "?max_workers=0",
    ] {
        let (status, body) = api(&app, &format!("/api/scaling{bad}"), bearer).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }

    // The dashboard's page, linked from every page's navigation, fills itself from the route.
    let (status, html) = api_text(&app, "/scaling", bearer).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains("<h1>Scaling</h1>") && html.contains("href=\"scaling\""),
        "{html}"
    );
    let (status, script) = api_text(&app, "/assets/scaling.js", bearer).await;
    assert_eq!(status, StatusCode::OK);
    assert!(script.contains("api/scaling"), "{script}");

    // The CLI prints the same JSON.
    let out = run_cli(
        WORKER,
        &redis.url(),
        &["scaling", "--json", "--target-latency", "10s"],
    );
    assert!(out.status.success(), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["queues"]["default"]["suggested_workers"], 3);
    let table = run_cli(WORKER, &redis.url(), &["scaling"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("suggested") && table.contains("default"),
        "{table}"
    );
}

/// `GET path` from the router as text, with `auth` as the `Authorization` header if given.
async fn api_text(app: &axum::Router, path: &str, auth: Option<&str>) -> (StatusCode, String) {
    let mut request = Request::builder().uri(path);
    if let Some(auth) = auth {
        request = request.header("authorization", auth);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_bind_serves_the_scaling_gauges() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let port = gator_tests::free_port();
    let bind = format!("127.0.0.1:{port}");
    let _worker = WorkerCommand::new(WORKER, &redis.url(), "default")
        .args(&[
            "--concurrency",
            "3",
            "--metrics-bind",
            &bind,
            "--scaling-target-latency",
            "10s",
        ])
        .spawn();
    Sleepy::call(1, 120_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let wanted = [
        r#"gator_queue_busy{queue="default"} 1"#,
        r#"gator_queue_capacity{queue="default"} 3"#,
        r#"gator_queue_backlog{queue="default"} 0"#,
        r#"gator_queue_workers{queue="default"} 1"#,
        r#"gator_queue_suggested_workers{queue="default"} 1"#,
        r#"gator_queue_latency_seconds{queue="default"} 0"#,
    ];
    wait_until("the scaling gauges", WAIT, || async {
        gator_tests::metrics::scrape(port)
            .is_some_and(|body| wanted.iter().all(|line| body.contains(line)))
    })
    .await;
    let refused = run_cli(
        WORKER,
        &redis.url(),
        &["--queues", "default", "--scaling-target-latency", "10ms"],
    );
    assert!(!refused.status.success());
}
