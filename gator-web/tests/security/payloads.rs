//! Item 3 of issue 29: a payload that multiplies. A payload over the limit is refused before
//! it is stored; one that arrives by another path is dead-lettered unrun, kept once; an
//! argument that does not fit is kept once, its error cut; listings serve arguments cut.

use crate::common::{TOKEN, Web, dead_lettered, dead_raw, json, post, push_raw, status};
use crate::{jobs, logs};
use gator_core::Error;
use gator_tests::{RedisServer, TestWorker};
use gator_worker::WorkerConfig;
use std::time::Duration;

/// A payload of `job` with `args`, as another language would write it.
fn payload(jid: &str, job: &str, args: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "jid": jid, "job": job, "args": args, "queue": "web", "created_at": 1, "enqueued_at": 1,
    })
}

fn worker_with_limit(redis: &RedisServer, max_payload: Option<usize>) -> TestWorker {
    let mut config = WorkerConfig::new(redis.url());
    config.queues = "web".parse().unwrap();
    config.concurrency = 1;
    config.poll_interval = Duration::from_millis(100);
    config.max_payload = max_payload;
    TestWorker::start_with(config)
}

#[test]
fn a_payload_over_the_limit_is_refused_413_over_http_and_nothing_is_stored() {
    let web = Web::start(&["--auth-token", TOKEN]);
    let big = "x".repeat(600 * 1024);
    let body = format!(r#"{{"force": true, "job": "send_email", "args": ["{big}"]}}"#);
    let answer = post(
        &web,
        "/api/queues/web/jobs",
        &crate::common::bearer(),
        &body,
    );
    assert_eq!(status(&answer), 413, "{}", &answer[..answer.len().min(400)]);
    assert_eq!(json(&answer)["code"], "payload_too_large", "{answer}");
    assert!(
        answer.len() < 2000,
        "the answer quotes the payload: {} bytes",
        answer.len()
    );
    assert_eq!(web.redis.cli(&["LLEN", "gator:{web}:queue"]), "0");
    assert_eq!(web.redis.cli(&["KEYS", "gator:{web}:job:*"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_refuses_a_payload_over_its_limit_before_storing_it() {
    let redis = RedisServer::start_single();
    let client = gator_core::Client::builder(redis.url())
        .max_payload(64 * 1024)
        .connect()
        .await
        .unwrap();
    let refused = jobs::SendEmail::call("y".repeat(100 * 1024))
        .through(&client)
        .dispatch()
        .await;
    match refused {
        Err(Error::PayloadTooLarge { bytes, max, .. }) => {
            assert!(bytes > 100 * 1024 && max == 64 * 1024, "{bytes} {max}");
        }
        other => panic!("expected PayloadTooLarge, got {other:?}"),
    }
    assert_eq!(redis.cli(&["LLEN", "gator:{web}:queue"]), "0");
    // Under the limit, it goes.
    jobs::SendEmail::call("small".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_push_over_the_worker_limit_goes_dead_unrun_kept_once() {
    let redis = RedisServer::start_single();
    let to = format!("oversize {}", "z".repeat(1 << 20));
    let pushed = payload(
        "0193a5f0-0000-7000-8000-0000000b16a1",
        "send_email",
        serde_json::json!([to]),
    );
    push_raw(&redis, &pushed).await;
    let worker = worker_with_limit(&redis, None);
    dead_lettered(&redis).await;
    worker.stop().await;
    assert!(jobs::RAN.tagged("oversize").is_empty(), "it ran");
    let dead = dead_raw(&redis).await;
    let entry: serde_json::Value = serde_json::from_str(&dead[0]).unwrap();
    assert!(
        entry["error"]
            .as_str()
            .unwrap()
            .contains("over this worker's limit"),
        "{}",
        entry["error"]
    );
    assert_eq!(entry["args"][0].as_str().map(str::len), Some(to.len()));
    assert!(entry.get("raw").is_none(), "copied into raw");
    assert!(
        dead[0].len() < to.len() + 2048,
        "{} bytes stored",
        dead[0].len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_argument_that_does_not_fit_is_kept_once_its_error_and_log_line_cut() {
    logs::capture();
    let redis = RedisServer::start_single();
    // A 2 MB text where the job wants a number: serde's error quotes the whole text.
    let text = format!("misfit-{}", "m".repeat(2 << 20));
    let pushed = payload(
        "0193a5f0-0000-7000-8000-0000000f1700",
        "count_to",
        serde_json::json!([text]),
    );
    push_raw(&redis, &pushed).await;
    let worker = worker_with_limit(&redis, Some(8 << 20));
    dead_lettered(&redis).await;
    worker.stop().await;
    let dead = dead_raw(&redis).await;
    // One copy of the argument: not repeated in the error, nor in `raw`.
    assert!(
        dead[0].len() < text.len() + 8 * 1024,
        "{} bytes stored",
        dead[0].len()
    );
    let entry: serde_json::Value = serde_json::from_str(&dead[0]).unwrap();
    let error = entry["error"].as_str().unwrap();
    assert!(
        error.len() <= gator_rules::MAX_ERROR_TEXT + 64,
        "{} bytes of error",
        error.len()
    );
    assert!(error.contains("more bytes cut]"), "{}", &error[..200]);
    let status = redis.cli(&[
        "GET",
        "gator:{web}:job:0193a5f0-0000-7000-8000-0000000f1700",
    ]);
    assert!(
        status.len() < 8 * 1024,
        "status record of {} bytes",
        status.len()
    );
    let longest = logs::text().lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 16 * 1024, "a log line of {longest} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_serve_large_args_cut_and_the_job_page_whole_on_request() {
    let web = Web::start(&["--auth-token", TOKEN]);
    let to = format!("wide {}", "w".repeat(200 * 1024));
    let jid = "0193a5f0-0000-7000-8000-00000000a1d3";
    let mut entry = payload(jid, "send_email", serde_json::json!([to]));
    entry["error"] = serde_json::json!("failed");
    let mut conn = web.redis.client().await;
    redis::cmd("ZADD")
        .arg("gator:{web}:dead")
        .arg(1_764_000_000_000u64)
        .arg(entry.to_string())
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    web.redis.cli(&["SADD", "gator:queues", "web"]);
    let bearer = crate::common::bearer();
    let listing = web.get("/api/sets/dead", &bearer);
    assert_eq!(status(&listing), 200);
    assert!(
        listing.len() < 8 * 1024,
        "a listing of {} bytes",
        listing.len()
    );
    let shown = &json(&listing)["entries"][0];
    assert_eq!(shown["args_cut"], true, "{shown}");
    let search = web.get("/api/search?q=wide", &bearer);
    assert!(
        search.len() < 8 * 1024,
        "a search answer of {} bytes",
        search.len()
    );
    let page = web.get(&format!("/api/jobs/{jid}"), &bearer);
    assert!(page.len() < 80 * 1024, "a job page of {} bytes", page.len());
    assert_eq!(json(&page)["args_cut"], true);
    let whole = web.get(&format!("/api/jobs/{jid}?full=true"), &bearer);
    assert_eq!(
        json(&whole)["payload"]["args"][0].as_str().map(str::len),
        Some(to.len())
    );
}
