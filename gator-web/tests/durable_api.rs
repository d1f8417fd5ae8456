//! Durable jobs in the HTTP API: a suspended job's details show when it wakes, why, and what it
//! saved (checkpoint, steps with their results in order, sleeps), each value a preview unless
//! asked for whole; the scheduled set's listing says which entries are suspended and why;
//! "run now" wakes one; a running job shows what it saved so far. Real jobs run by an
//! in-process worker against a real redis-server; requests go straight to the router.
#![allow(clippy::unwrap_used)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use gator_core::{Context, JobError, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_web::{WebConfig, router};
use gator_worker::{QueueSelection, WorkerConfig};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tower::ServiceExt;

const TOKEN: &str = "t0ken-for-the-durable-tests";
const WAIT: Duration = Duration::from_secs(15);
/// Lets `holds` end.
static RELEASE: AtomicBool = AtomicBool::new(false);

/// Saves a checkpoint of `cp_bytes` bytes, a step whose result is markup, and sleeps a minute.
#[job(queue = "web_durable")]
async fn saves_then_sleeps(ctx: Context, cp_bytes: usize) -> Result<(), JobError> {
    ctx.checkpoint(&json!({"row": 7, "pad": "p".repeat(cp_bytes)}))
        .await?;
    ctx.step("charge", || async {
        Ok::<_, JobError>("<script>alert(1)</script>".to_owned())
    })
    .await?;
    ctx.step("mail", || async { Ok::<_, JobError>(3) }).await?;
    ctx.sleep(Duration::from_secs(60)).await?;
    Ok(())
}

/// Checkpoints, then runs until released.
#[job(queue = "web_durable")]
async fn holds(ctx: Context) -> Result<(), JobError> {
    ctx.checkpoint(&json!({"row": 42})).await?;
    while !RELEASE.load(Ordering::Acquire) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

async fn call(app: &Router, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {TOKEN}"));
    let body = match body {
        Some(json) => {
            request = request.header("content-type", "application/json");
            Body::from(json.to_string())
        }
        None => Body::empty(),
    };
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 10 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn get(app: &Router, path: &str) -> Value {
    let (status, body) = call(app, "GET", path, None).await;
    assert_eq!(status, StatusCode::OK, "GET {path}: {body}");
    body
}

fn worker(redis: &RedisServer) -> TestWorker {
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec!["web_durable".into()]);
    config.concurrency = 2;
    config.poll_interval = Duration::from_millis(200);
    config.shutdown_timeout = Duration::from_secs(2);
    TestWorker::start_with(config)
}

async fn state_of(app: &Router, jid: &str) -> String {
    let job = get(app, &format!("/api/jobs/{jid}")).await;
    job["status"]["state"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_jobs_details_show_its_wake_time_reason_and_saved_state_and_run_now_wakes_it() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let app = router(client.clone(), WebConfig::new().auth_token(TOKEN));
    let jid = SavesThenSleeps::call(1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis);
    wait_until("the job to suspend", WAIT, || async {
        state_of(&app, &jid).await == "suspended"
    })
    .await;

    let job = get(&app, &format!("/api/jobs/{jid}")).await;
    assert_eq!(job["status"]["reason"], "sleep 1", "{job}");
    assert!(job["status"]["at_ms"].as_u64().unwrap() > 0);
    assert_eq!(job["place"], "scheduled", "{job}");
    assert_eq!(
        job["score_ms"], job["status"]["at_ms"],
        "its wake time is its score"
    );
    let durable = &job["durable"];
    assert_eq!(durable["checkpoint"]["row"], 7, "{job}");
    let steps: Vec<(&str, &Value)> = durable["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), &s["value"]))
        .collect();
    assert_eq!(
        steps,
        [
            ("charge", &json!("<script>alert(1)</script>")),
            ("mail", &json!(3))
        ]
    );
    assert_eq!(
        (durable["sleeps"].as_u64(), durable["slices"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(durable["cut"], false);
    assert!(job["payload"].get("durable").is_none(), "shown once: {job}");

    let listed = get(&app, "/api/sets/scheduled").await;
    assert_eq!(listed["entries"][0]["jid"], jid.as_str(), "{listed}");
    assert_eq!(listed["entries"][0]["suspended"], "sleep 1", "{listed}");

    let (status, answer) = call(
        &app,
        "POST",
        &format!("/api/sets/scheduled/jobs/{jid}/retry"),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    wait_until("the woken job to finish", WAIT, || async {
        state_of(&app, &jid).await == "done"
    })
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_checkpoint_is_served_as_a_preview_and_whole_on_request() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let app = router(client.clone(), WebConfig::new().auth_token(TOKEN));
    let jid = SavesThenSleeps::call(60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis);
    wait_until("the job to suspend", WAIT, || async {
        state_of(&app, &jid).await == "suspended"
    })
    .await;
    worker.stop().await;

    let job = get(&app, &format!("/api/jobs/{jid}")).await;
    let preview = job["durable"]["checkpoint"].as_str().unwrap();
    assert!(preview.len() < 1200, "{} bytes", preview.len());
    assert!(preview.ends_with("more bytes cut]"), "{preview}");
    assert_eq!(job["durable"]["cut"], true);
    assert!(job["durable"]["checkpoint_bytes"].as_u64().unwrap() > 60_000);
    let whole = get(&app, &format!("/api/jobs/{jid}?full=true")).await;
    assert_eq!(
        whole["durable"]["checkpoint"]["pad"]
            .as_str()
            .unwrap()
            .len(),
        60_000
    );
    assert_eq!(whole["durable"]["cut"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_jobs_details_show_the_checkpoint_it_saved_in_flight() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let app = router(client.clone(), WebConfig::new().auth_token(TOKEN));
    RELEASE.store(false, Ordering::Release);
    let jid = Holds::call().through(&client).dispatch().await.unwrap();
    let worker = worker(&redis);
    wait_until("its checkpoint to show while it runs", WAIT, || async {
        let job = get(&app, &format!("/api/jobs/{jid}")).await;
        job["status"]["state"] == "running" && job["durable"]["checkpoint"]["row"] == 42
    })
    .await;
    let job = get(&app, &format!("/api/jobs/{jid}")).await;
    assert_eq!(job["place"], "running", "{job}");
    RELEASE.store(true, Ordering::Release);
    worker.stop().await;
}
