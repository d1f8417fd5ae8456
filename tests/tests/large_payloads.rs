//! Large payloads (issue 35), against a real redis-server and real worker processes: a small
//! payload is stored as it always was; one over the threshold is stored with its arguments
//! zstd-compressed, and the job sees the same arguments; a failing one retries and dies with
//! its arguments readable through `Admin`'s search and the HTTP API; one whose worker is
//! killed mid-run is recovered and runs with its arguments; a zstd bomb is refused. Payloads
//! stored aside, in a key of their own: `large_payloads/aside.rs`.
#![allow(clippy::unwrap_used)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use gator_core::admin::{Place, SearchQuery};
use gator_core::{Admin, Client, job};
use gator_tests::{RedisServer, WorkerProcess, spawn_worker_process_with, terminate, wait_until};
use serde_json::Value;
use std::time::Duration;
use tower::ServiceExt;

#[path = "large_payloads/aside.rs"]
mod aside;

/// Run by the test worker binary (tests/src/bin/gator-test-worker/main.rs): stores `blob` in
/// `test:blob:<id>`, then fails if `fail`.
#[job(queue = "large", retries = 1, backoff = ["100ms"])]
async fn keep_blob(_id: u64, _blob: String, _fail: bool, _millis: u64) -> Result<(), String> {
    Ok(())
}

const LIMIT: &str = "4MiB";

async fn big_client(redis: &RedisServer) -> Client {
    Client::builder(redis.url())
        .max_payload(4 << 20)
        .connect()
        .await
        .unwrap()
}

fn worker(redis: &RedisServer, extra: &[&str]) -> WorkerProcess {
    let mut args = vec!["--max-payload", LIMIT];
    args.extend_from_slice(extra);
    spawn_worker_process_with(
        env!("CARGO_BIN_EXE_gator-test-worker"),
        &redis.url(),
        "large",
        2,
        &args,
    )
}

/// Text that compresses well: words repeated with a counter.
fn prose(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 32);
    let mut n = 0u64;
    while text.len() < bytes {
        text.push_str(&format!("invoice line {n} of the monthly report; "));
        n += 1;
    }
    text.truncate(bytes);
    text
}

/// Text that does not compress: 64 symbols drawn by xorshift.
fn noise(bytes: usize) -> String {
    const SYMBOLS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(SYMBOLS[(state % 64) as usize])
        })
        .collect()
}

/// The payloads waiting in the `large` queue, as stored.
async fn stored(redis: &RedisServer) -> Vec<String> {
    // The harness's connection: a cluster's too (the URL is then a list of nodes).
    let mut conn = redis.client().await;
    redis::cmd("LRANGE")
        .arg("gator:{large}:queue")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap()
}

async fn blob_of(redis: &RedisServer, id: u64) -> Option<String> {
    let mut conn = redis.client().await;
    redis::cmd("GET")
        .arg(format!("test:blob:{id}"))
        .query_async(&mut conn)
        .await
        .unwrap()
}

async fn wait_for_blobs(redis: &RedisServer, ids: &[u64]) {
    wait_until(
        "every job stored its blob",
        Duration::from_secs(30),
        || async {
            for id in ids {
                if blob_of(redis, *id).await.is_none() {
                    return false;
                }
            }
            true
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_payloads_stay_as_they_were_and_large_ones_are_compressed_and_run_with_their_args() {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let blobs = [
        (1, prose(1024)),
        (2, prose(64 * 1024)),
        (3, prose(1 << 20)),
        (4, noise(1 << 20)),
    ];
    for (id, blob) in &blobs {
        KeepBlob::call(*id, blob.clone(), false, 0)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let stored = stored(&redis).await;
    assert_eq!(stored.len(), 4);
    // 1 KiB: byte for byte the plain payload, its arguments inline.
    let small: Value = serde_json::from_str(&stored[0]).unwrap();
    assert_eq!(small["args"][1].as_str(), Some(blobs[0].1.as_str()));
    assert!(!stored[0].contains("\"packed\""), "{}", &stored[0][..200]);
    // 64 KiB and 1 MiB of prose: compressed, far smaller than their arguments.
    for (at, raw) in [(1, 64 * 1024), (2, 1 << 20)] {
        let packed: Value = serde_json::from_str(&stored[at]).unwrap();
        assert_eq!(packed["args"], Value::Null);
        assert_eq!(packed["packed"]["codec"], "zstd");
        assert!(
            stored[at].len() < raw / 4,
            "{} bytes stored",
            stored[at].len()
        );
    }
    // 1 MiB of noise does not shrink: over the aside threshold, it is stored aside
    // (`large_payloads/aside.rs`), its entry a marker.
    assert!(stored[3].contains("\"aside\":true"));

    let mut worker = worker(&redis, &[]);
    wait_for_blobs(&redis, &[1, 2, 3, 4]).await;
    for (id, blob) in &blobs {
        assert_eq!(
            blob_of(&redis, *id).await.as_deref(),
            Some(blob.as_str()),
            "job {id}"
        );
    }
    assert!(terminate(&mut worker).success());
    // Nothing of the jobs is left behind.
    assert_eq!(redis.cli(&["LLEN", "gator:{large}:queue"]), "0");
    assert_eq!(redis.cli(&["KEYS", "gator:{large}:inflight:*"]), "");
    assert_eq!(redis.cli(&["ZCARD", "gator:{large}:dead"]), "0");
    assert_eq!(redis.cli(&["KEYS", "*:payload:*"]), "", "no side key left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_large_job_retries_and_dies_with_its_args_readable_by_search_and_the_api() {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let blob = format!("needle-in-the-blob {}", prose(256 * 1024));
    let jid = KeepBlob::call(7, blob.clone(), true, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let mut worker = worker(&redis, &[]);
    wait_until("the job is dead", Duration::from_secs(30), || async {
        redis.cli(&["ZCARD", "gator:{large}:dead"]) == "1"
    })
    .await;
    assert!(terminate(&mut worker).success());
    let dead = redis.zset_json("gator:{large}:dead").await;
    assert_eq!(
        dead[0]["packed"]["codec"], "zstd",
        "stored packed in the dead set"
    );
    assert!(
        dead[0]["attempt"].as_u64().unwrap() >= 1,
        "it was retried before it died"
    );

    let admin = Admin::new(client.clone());
    let mut query = SearchQuery::new("needle-in-the-blob");
    query.places = vec![Place::Dead];
    let page = admin.search(&query).await.unwrap();
    assert_eq!(
        page.hits.len(),
        1,
        "found by a piece of its packed arguments"
    );
    assert_eq!(page.hits[0].jid.as_deref(), Some(jid.as_str()));

    // `gator-worker job show` prints the arguments decoded, and that they were packed.
    let mut out = Vec::new();
    gator_worker::cli::AdminCommand::Job {
        action: gator_worker::cli::job::JobAction::Show {
            jid: jid.clone(),
            json: true,
        },
    }
    .run(&admin, &mut out)
    .await
    .unwrap();
    let shown: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(shown["status"], "dead");
    let args = shown["args"].to_string();
    assert!(
        args.contains("needle-in-the-blob"),
        "{}",
        &args[..200.min(args.len())]
    );
    assert!(
        shown["packed"].as_str().unwrap().starts_with("zstd: "),
        "{shown}"
    );

    let config = gator_web::WebConfig::new().auth_token("t0ken-for-the-large-tests");
    let app = gator_web::router(client, config);
    let response = app
        .oneshot(
            Request::get(format!("/api/jobs/{jid}?full=true"))
                .header("authorization", "Bearer t0ken-for-the-large-tests")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = axum::body::to_bytes(response.into_body(), 8 << 20)
        .await
        .unwrap();
    let view: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(view["payload"]["args"][1].as_str(), Some(blob.as_str()));
    assert!(view["payload"].get("packed").is_none());
    let raw = serde_json::json!([7, blob, true, 0]).to_string().len();
    assert_eq!(view["packed"]["raw"].as_u64().unwrap() as usize, raw);
    assert!(view["packed"]["stored"].as_u64().unwrap() < 64 * 1024);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_job_whose_worker_is_killed_runs_again_with_its_args() {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let blob = prose(512 * 1024);
    KeepBlob::call(9, blob.clone(), false, 2000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let id = ["--worker-id", "pod-large", "--lease", "120s"];
    let mut first = worker(&redis, &id);
    wait_until("the job started", Duration::from_secs(20), || async {
        redis.cli(&["GET", "test:started:9"]) == "1"
    })
    .await;
    first.kill().unwrap(); // SIGKILL: the job stays in flight
    first.wait().unwrap();
    assert_eq!(blob_of(&redis, 9).await, None);
    let mut restarted = worker(&redis, &id);
    wait_for_blobs(&redis, &[9]).await;
    assert_eq!(blob_of(&redis, 9).await.as_deref(), Some(blob.as_str()));
    assert!(terminate(&mut restarted).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zstd_bomb_is_refused_and_dead_lettered_with_the_reason() {
    let redis = RedisServer::start();
    // 16 MiB of zeros, compressed to a few KiB: over the worker's 4 MiB limit once decoded.
    let bomb = gator_core::payload::packed::pack_text(&format!(
        "[1,\"{}\",false,0]",
        "0".repeat(16 << 20)
    ));
    let payload = serde_json::json!({
        "jid": "bomb", "job": "keep_blob", "args": null, "queue": "large",
        "created_at": 1, "enqueued_at": 1, "packed": bomb,
    });
    redis.cli(&["SADD", "gator:queues", "large"]);
    redis.cli(&["RPUSH", "gator:{large}:queue", &payload.to_string()]);
    let mut worker = worker(&redis, &[]);
    wait_until("the bomb is dead", Duration::from_secs(30), || async {
        redis.cli(&["ZCARD", "gator:{large}:dead"]) == "1"
    })
    .await;
    assert!(terminate(&mut worker).success());
    let dead = redis.zset_json("gator:{large}:dead").await;
    let error = dead[0]["error"].as_str().unwrap();
    assert!(error.contains("inflate past"), "{error}");
    assert_eq!(blob_of(&redis, 1).await, None, "it never ran");
}
