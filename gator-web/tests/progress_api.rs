//! A job's progress and position over the HTTP API: `GET /api/jobs/{jid}` carries the last
//! progress a running job reported (with an in-process worker), `GET
//! /api/jobs/{jid}/position` where a queued or parked job stands; and the job page loads the
//! script that shows them.
#![allow(clippy::unwrap_used)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use gator_core::{Context, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_web::{WebConfig, router};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tower::ServiceExt;

static RELEASE: AtomicBool = AtomicBool::new(false);

/// Reports half done, then runs until released.
#[job(queue = "web-progress")]
async fn halfway(ctx: Context) -> Result<(), gator_core::Error> {
    ctx.progress(0.5, "page 5 of 10").await?;
    while !RELEASE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Never run here: its jobs wait in their queue.
#[job(queue = "web-waiting")]
async fn waits(_n: u32) {}

const TOKEN: &str = "t0ken-for-the-tests";

async fn get(app: &Router, path: &str) -> Value {
    let request = Request::builder()
        .uri(path)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "GET {path}");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_shows_a_running_jobs_progress_and_a_queued_jobs_position() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let app = router(client.clone(), WebConfig::new().auth_token(TOKEN));
    let mut waiting = Vec::new();
    for n in 0..3 {
        waiting.push(Waits::call(n).through(&client).dispatch().await.unwrap());
    }
    let position = get(&app, &format!("/api/jobs/{}/position", waiting[2])).await;
    assert_eq!(position["state"], "queued");
    assert_eq!(
        (position["position"].as_u64(), position["length"].as_u64()),
        (Some(3), Some(3))
    );
    assert!(position["no_estimate"].is_string(), "{position}");
    // Parked (a job with a limit key makes its queue controlled): its place among its key's.
    let mut parked = Vec::new();
    for n in 0..2 {
        let job = Waits::call(n).queue("web-parked").limit_key("acme");
        parked.push(job.through(&client).dispatch().await.unwrap());
    }
    let position = get(&app, &format!("/api/jobs/{}/position", parked[1])).await;
    assert_eq!(position["state"], "parked", "{position}");
    assert_eq!(position["key"], "acme");
    assert_eq!(position["critical"], false);
    assert_eq!(
        (position["position"].as_u64(), position["length"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(position["waiting_keys"].as_u64(), Some(1));

    let jid = Halfway::call().through(&client).dispatch().await.unwrap();
    let worker = TestWorker::start(&redis.url(), Some("web-progress"), 1);
    let path = format!("/api/jobs/{jid}");
    // Its `running` record is written beside the start of its body: wait for both.
    wait_until("its progress served", Duration::from_secs(15), || async {
        let job = get(&app, &path).await;
        job["progress"]["fraction"].as_f64() == Some(0.5) && job["status"]["state"] == "running"
    })
    .await;
    let job = get(&app, &path).await;
    assert_eq!(job["status"]["state"], "running");
    assert_eq!(job["progress"]["note"], "page 5 of 10");
    assert!(job["progress"]["at_ms"].as_u64().unwrap() > 0);
    RELEASE.store(true, Ordering::SeqCst);
    client
        .wait_for(&jid, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(get(&app, &path).await["progress"]["fraction"], 0.5);
    worker.stop().await;

    let script = get(&app, "/assets/job.js").await;
    let script = script.as_str().unwrap();
    assert!(
        script.contains("/position"),
        "the job page asks for the position"
    );
    assert!(script.contains("parked"), "and shows a parked job's place");
}
