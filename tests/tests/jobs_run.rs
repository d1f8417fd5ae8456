//! Jobs dispatched through the client run in a real worker with their arguments.

use gator_core::{Client, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn seen(tag: &str) -> Vec<String> {
    SEEN.lock()
        .unwrap()
        .iter()
        .filter(|s| s.starts_with(tag))
        .cloned()
        .collect()
}

async fn wait_for_runs(tag: &str, count: usize) {
    wait_until(
        &format!("{count} runs of {tag}"),
        Duration::from_secs(10),
        || async { seen(tag).len() >= count },
    )
    .await;
}

#[derive(Debug, Serialize, Deserialize)]
struct Order {
    id: u64,
    items: Vec<String>,
}

#[job]
fn record_sync(tag: String, n: i64, order: Order) {
    SEEN.lock().unwrap().push(format!(
        "{tag} sync n={n} order={} items={}",
        order.id,
        order.items.join("+")
    ));
}

#[job(queue = "async-q")]
async fn record_async(tag: String, n: i64) -> Result<(), std::io::Error> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    SEEN.lock().unwrap().push(format!("{tag} async n={n}"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_and_async_jobs_run_with_their_args() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("default,async-q"), 4);

    let order = Order {
        id: 7,
        items: vec!["tea".into(), "cake".into()],
    };
    RecordSync::call("t1".into(), -3, order)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    RecordAsync::call("t1".into(), 42)
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    wait_for_runs("t1", 2).await;
    let mut runs = seen("t1");
    runs.sort();
    assert_eq!(
        runs,
        vec!["t1 async n=42", "t1 sync n=-3 order=7 items=tea+cake"]
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_returns_a_jid_and_the_payload_lands_on_the_jobs_queue() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = RecordAsync::call("t2".into(), 1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    let raw: Vec<String> = redis::cmd("LRANGE")
        .arg("gator:{async-q}:queue")
        .arg(0)
        .arg(-1)
        .query_async(&mut redis.client().await)
        .await
        .unwrap();
    assert_eq!(raw.len(), 1);
    let payload: serde_json::Value = serde_json::from_str(&raw[0]).unwrap();
    assert_eq!(payload["jid"], jid.as_str());
    assert_eq!(payload["job"], "record_async");
    assert_eq!(payload["queue"], "async-q");
    assert_eq!(payload["args"], serde_json::json!(["t2", 1]));
    assert_eq!(payload["attempt"].as_u64().unwrap_or(0), 0);
    assert!(
        payload["created_at"].as_u64().unwrap() > 1_700_000_000_000,
        "created_at is ms since the epoch"
    );
    assert_eq!(redis.cli(&["SMEMBERS", "gator:queues"]), "async-q");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_many_enqueues_every_job_and_all_of_them_run() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jobs = (0..200).map(|n| RecordAsync::call("t3".into(), n));
    let jids = client.dispatch_many(jobs).await.unwrap();
    assert_eq!(jids.len(), 200);
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("async-q")
            .await
            .unwrap(),
        200
    );

    let worker = TestWorker::start(&redis.url(), Some("async-q"), 10);
    wait_for_runs("t3", 200).await;
    let mut ns: Vec<i64> = seen("t3")
        .iter()
        .map(|s| s.rsplit('=').next().unwrap().parse().unwrap())
        .collect();
    ns.sort();
    assert_eq!(
        ns,
        (0..200).collect::<Vec<_>>(),
        "each job ran exactly once"
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_can_override_the_jobs_queue() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    RecordAsync::call("t4".into(), 9)
        .queue("elsewhere")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("elsewhere")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("async-q")
            .await
            .unwrap(),
        0
    );

    let worker = TestWorker::start(&redis.url(), Some("elsewhere"), 2);
    wait_for_runs("t4", 1).await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_queue_name_is_refused_before_anything_is_sent() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let err = RecordAsync::call("t5".into(), 1)
        .queue("bad{queue}")
        .through(&client)
        .dispatch()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("invalid queue name"), "{err}");
    assert_eq!(redis.cli(&["DBSIZE"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_dispatched_in_a_second_waits_in_the_scheduled_set_then_runs() {
    let redis = RedisServer::start();
    let client: Client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("async-q"), 2);
    let due = SystemTime::now() + Duration::from_secs(1);
    RecordAsync::call("t6".into(), 5)
        .at(due)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(redis.cli(&["ZCARD", "gator:{async-q}:scheduled"]), "1");

    wait_for_runs("t6", 1).await;
    assert!(SystemTime::now() >= due, "the job ran before it was due");
    assert_eq!(redis.cli(&["ZCARD", "gator:{async-q}:scheduled"]), "0");
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_scheduled_in_the_past_is_enqueued_at_once() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let past = SystemTime::now() - Duration::from_secs(3600);
    RecordAsync::call("t7".into(), 5)
        .at(past)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("async-q")
            .await
            .unwrap(),
        1
    );
    assert_eq!(redis.cli(&["ZCARD", "gator:{async-q}:scheduled"]), "0");
}
