//! Bad input and failing jobs: the worker keeps running, and every job ends up in the retry
//! set or the dead set with its reason. Nothing vanishes.

use gator_core::{JobError, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static SURVIVED: AtomicUsize = AtomicUsize::new(0);

#[job(queue = "f")]
fn explode(what: String) {
    panic!("boom: {what}");
}

#[job(queue = "f")]
async fn fail_with(message: String) -> Result<(), String> {
    Err(message)
}

#[job(queue = "f")]
async fn reject_input(value: i64) -> Result<(), JobError> {
    Err(JobError::discard(format!("{value} is not a valid amount")))
}

#[job(queue = "f")]
async fn still_alive() {
    SURVIVED.fetch_add(1, Ordering::SeqCst);
}

async fn set_entries(redis: &RedisServer, set: &str) -> Vec<Value> {
    redis.zset_json(&format!("gator:{{f}}:{set}")).await
}

async fn wait_for_entries(redis: &RedisServer, set: &str, n: usize) -> Vec<Value> {
    wait_until(
        &format!("{n} entries in the {set} set"),
        Duration::from_secs(10),
        || async { set_entries(redis, set).await.len() >= n },
    )
    .await;
    set_entries(redis, set).await
}

fn entry_for<'a>(entries: &'a [Value], job: &str) -> &'a Value {
    entries
        .iter()
        .find(|e| e["job"] == job)
        .unwrap_or_else(|| panic!("no entry for {job} in {entries:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panics_and_errors_go_to_the_retry_set_with_their_reason_and_the_worker_keeps_going() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("f"), 2);
    Explode::call("the reactor".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    FailWith::call("smtp said no".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    redis.cli(&["RPUSH", "gator:{f}:queue", r#"{"jid":"u1","job":"nobody_knows_me","args":[],"queue":"f","created_at":1,"enqueued_at":1}"#]);

    let retries = wait_for_entries(&redis, "retry", 3).await;
    let panicked = entry_for(&retries, "explode");
    assert_eq!(panicked["error"], "job panicked: boom: the reactor");
    assert_eq!(panicked["attempt"], 1);
    assert!(panicked["failed_at"].as_u64().is_some());
    assert_eq!(entry_for(&retries, "fail_with")["error"], "smtp said no");
    let unknown = entry_for(&retries, "nobody_knows_me");
    assert_eq!(
        unknown["error"],
        "no job named \"nobody_knows_me\" is registered in this worker"
    );
    assert_eq!(
        unknown["jid"], "u1",
        "the unknown job keeps its identity for a worker that knows it"
    );

    StillAlive::call()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the next job to run", Duration::from_secs(10), || async {
        SURVIVED.load(Ordering::SeqCst) >= 1
    })
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_malformed_json_and_non_retryable_errors_go_straight_to_the_dead_set() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("f"), 2);
    let bad_args = r#"{"jid":"b1","job":"fail_with","args":[{"not":"a string"}],"queue":"f","created_at":1,"enqueued_at":1}"#;
    let garbage = "{this is not json";
    redis.cli(&["RPUSH", "gator:{f}:queue", bad_args]);
    redis.cli(&["RPUSH", "gator:{f}:queue", garbage]);
    RejectInput::call(-5)
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    let dead = wait_for_entries(&redis, "dead", 3).await;
    let args_entry = entry_for(&dead, "fail_with");
    assert!(
        args_entry["error"]
            .as_str()
            .unwrap()
            .starts_with("arguments do not fit job \"fail_with\""),
        "{args_entry}"
    );
    assert_eq!(
        args_entry["args"],
        serde_json::json!([{"not": "a string"}]),
        "the arguments are kept"
    );
    let garbage_entry = entry_for(&dead, "");
    assert_eq!(
        garbage_entry["raw"], garbage,
        "an unparseable payload is kept verbatim"
    );
    assert!(
        garbage_entry["error"]
            .as_str()
            .unwrap()
            .starts_with("malformed payload"),
        "{garbage_entry}"
    );
    assert_eq!(
        entry_for(&dead, "reject_input")["error"],
        "-5 is not a valid amount"
    );
    assert_eq!(redis.cli(&["ZCARD", "gator:{f}:retry"]), "0");
    worker.stop().await;
}
