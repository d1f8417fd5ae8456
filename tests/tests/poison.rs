//! Nothing a payload holds can poison a worker: bytes that are not UTF-8, a `Deserialize` that
//! panics, a backoff of centuries, timestamps written as floats, an outcome that can never be
//! written, queue names that are not queue names, a queue whose keys are broken. Each job ends
//! up retried or dead with its reason and its payload kept, and the worker runs on.

use base64::Engine;
use gator_core::job;
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_worker::WorkerConfig;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::sync::Mutex;
use std::time::Duration;

static RAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

fn ran(id: u64) -> bool {
    RAN.lock().unwrap().contains(&id)
}

#[job(queue = "poison")]
async fn note(id: u64) {
    RAN.lock().unwrap().push(id);
}

#[job(queue = "poison", retries = 3)]
async fn always_fails(why: String) -> Result<(), String> {
    Err(why)
}

/// A number whose `Deserialize` panics on 13.
#[derive(Debug, Serialize)]
struct Unlucky(u32);

impl<'de> Deserialize<'de> for Unlucky {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Unlucky, D::Error> {
        let n = u32::deserialize(d)?;
        assert_ne!(n, 13, "13 is unlucky");
        Ok(Unlucky(n))
    }
}

#[job(queue = "poison")]
async fn takes_unlucky(n: Unlucky) {
    RAN.lock().unwrap().push(u64::from(n.0));
}

fn centuries(_failures: u32) -> Duration {
    Duration::MAX
}

#[job(queue = "poison", backoff = centuries)]
async fn fails_for_centuries() -> Result<(), String> {
    Err("try again in a few centuries".into())
}

fn payload(jid: &str, job: &str, args: &str) -> String {
    format!(
        r#"{{"jid":"{jid}","job":"{job}","args":{args},"queue":"poison","created_at":1,"enqueued_at":1}}"#
    )
}

fn worker(redis: &RedisServer, queues: &str, concurrency: usize) -> TestWorker {
    TestWorker::start(&redis.url(), Some(queues), concurrency)
}

async fn dead(redis: &RedisServer, n: usize) -> Vec<Value> {
    wait_until(
        &format!("{n} entries in the dead set"),
        Duration::from_secs(15),
        || async { redis.zset_json("gator:{poison}:dead").await.len() >= n },
    )
    .await;
    redis.zset_json("gator:{poison}:dead").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_that_are_not_utf8_go_to_the_dead_set_in_base64_and_their_batch_mates_run() {
    let redis = RedisServer::start();
    redis.cli(&["SADD", "gator:queues", "poison"]);
    let garbage: &[u8] = b"\xff\xfe{\"jid\":";
    // One push, so that one fetch takes all three.
    let mut conn = redis.client().await;
    redis::cmd("RPUSH")
        .arg("gator:{poison}:queue")
        .arg(payload("u1", "note", "[1001]").as_bytes())
        .arg(garbage)
        .arg(payload("u2", "note", "[1002]").as_bytes())
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    let worker = worker(&redis, "poison", 3);
    wait_until("both good jobs to run", Duration::from_secs(15), || async {
        ran(1001) && ran(1002)
    })
    .await;
    let dead = dead(&redis, 1).await;
    let kept = base64::engine::general_purpose::STANDARD
        .decode(
            dead[0]["raw_base64"]
                .as_str()
                .expect("the bytes, in base64"),
        )
        .unwrap();
    assert_eq!(kept, garbage, "the bytes are kept exactly");
    assert!(
        dead[0]["error"].as_str().unwrap().contains("UTF-8"),
        "{}",
        dead[0]
    );
    worker.stop().await;
    assert_eq!(redis.cli(&["KEYS", "gator:*:inflight:*"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_argument_decoder_sends_its_job_to_the_dead_set_and_the_worker_runs_on() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // One processor: if the panic killed it, nothing after would run.
    let worker = worker(&redis, "poison", 1);
    TakesUnlucky::call(Unlucky(13))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    TakesUnlucky::call(Unlucky(2013))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    Note::call(2001).through(&client).dispatch().await.unwrap();
    wait_until(
        "the jobs after it to run",
        Duration::from_secs(15),
        || async { ran(2013) && ran(2001) },
    )
    .await;
    let dead = dead(&redis, 1).await;
    let error = dead[0]["error"].as_str().unwrap();
    assert!(
        error.contains("panicked") && error.contains("13 is unlucky"),
        "{error}"
    );
    // The payload is kept as it came, once: its args, and no copy of it in `raw`.
    assert_eq!(dead[0]["args"], serde_json::json!([13]), "{}", dead[0]);
    assert!(dead[0].get("raw").is_none(), "stored twice: {}", dead[0]);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backoff_of_centuries_waits_five_years_and_the_worker_runs_on() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis, "poison", 1);
    FailsForCenturies::call()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    Note::call(3001).through(&client).dispatch().await.unwrap();
    wait_until("the next job to run", Duration::from_secs(15), || async {
        ran(3001)
    })
    .await;
    let now = client.redis_time().await.unwrap() as f64;
    let score: f64 = redis
        .cli(&["ZRANGE", "gator:{poison}:retry", "0", "0", "WITHSCORES"])
        .lines()
        .nth(1)
        .expect("the job waits in the retry set")
        .parse()
        .unwrap();
    let years = (score - now) / (365.0 * 24.0 * 3600.0 * 1000.0);
    assert!((4.9..5.1).contains(&years), "due in {years:.2} years");
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_with_float_timestamps_is_retried_and_written_back_as_it_came() {
    let redis = RedisServer::start();
    redis.cli(&["SADD", "gator:queues", "poison"]);
    // What Python's `time.time() * 1000` gives, and a field of a newer producer.
    let sent = r#"{"jid":"f1","job":"always_fails","args":["nope"],"queue":"poison","created_at":1732300000000.5,"enqueued_at":1.7323e12,"trace":{"sampled":1e0}}"#;
    redis.cli(&["RPUSH", "gator:{poison}:queue", sent]);
    let worker = worker(&redis, "poison", 1);
    wait_until("the job to be retried", Duration::from_secs(15), || async {
        redis.cli(&["ZCARD", "gator:{poison}:retry"]) == "1"
    })
    .await;
    let stored = redis.cli(&["ZRANGE", "gator:{poison}:retry", "0", "0"]);
    for kept in [
        r#""created_at":1732300000000.5"#,
        r#""trace":{"sampled":1e0}"#,
        r#""args":["nope"]"#,
    ] {
        assert!(stored.contains(kept), "{kept} is not in {stored}");
    }
    let retried: Value = serde_json::from_str(&stored).unwrap();
    assert_eq!(retried["attempt"], 1);
    assert_eq!(retried["error"], "nope");
    assert_eq!(redis.cli(&["ZCARD", "gator:{poison}:dead"]), "0");
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_that_can_never_be_written_is_left_for_recovery_and_the_worker_runs_on() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // The retry set is a string: every retry write fails with WRONGTYPE.
    redis.cli(&["SET", "gator:{poison}:retry", "not a sorted set"]);
    let mut config = WorkerConfig::new(redis.url());
    config.queues = "poison".parse().unwrap();
    config.concurrency = 1;
    config.recovery_interval = Duration::from_millis(300);
    let worker = TestWorker::start_with(config);
    AlwaysFails::call("broken".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    Note::call(4001).through(&client).dispatch().await.unwrap();
    // One processor: had it kept retrying the write, nothing after would run.
    wait_until("the next job to run", Duration::from_secs(15), || async {
        ran(4001)
    })
    .await;
    // Once the key is repaired, recovery puts the job back and its failure is recorded.
    redis.cli(&["DEL", "gator:{poison}:retry"]);
    wait_until(
        "the stranded job to be recorded in the retry set",
        Duration::from_secs(20),
        || async { redis.cli(&["ZCARD", "gator:{poison}:retry"]) == "1" },
    )
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_in_the_known_queues_set_that_are_not_queue_names_are_ignored() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    redis.cli(&["SADD", "gator:queues", "", "a b{c}", "poison"]);
    redis.cli(&["RPUSH", "gator:{}:queue", &payload("e1", "note", "[5001]")]);
    let worker = TestWorker::start(&redis.url(), None, 2);
    Note::call(5002).through(&client).dispatch().await.unwrap();
    wait_until(
        "the valid queue's job to run",
        Duration::from_secs(15),
        || async { ran(5002) },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !ran(5001),
        "a job was taken from a queue without a hash tag"
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{}:queue"]), "1");
    let keys = redis.cli(&["KEYS", "*"]);
    assert!(
        !keys.contains("{}:leases") && !keys.contains("{a b{c}}"),
        "keys for invalid queue names: {keys}"
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_with_broken_keys_does_not_stop_promotion_or_recovery_of_the_others() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // "broken" comes first in every pass; its sets and lease index are strings.
    for key in ["scheduled", "retry", "leases"] {
        redis.cli(&["SET", &format!("gator:{{broken}}:{key}"), "x"]);
    }
    // A dead process holding a job of "poison", its lease long expired.
    let now = client.redis_time().await.unwrap();
    redis.cli(&[
        "ZADD",
        "gator:{poison}:leases",
        &(now - 60_000).to_string(),
        "gone:1:abcdef",
    ]);
    redis.cli(&[
        "RPUSH",
        "gator:{poison}:inflight:gone:1:abcdef",
        &payload("o1", "note", "[6001]"),
    ]);
    let mut config = WorkerConfig::new(redis.url());
    config.queues = "broken,poison".parse().unwrap();
    config.poll_interval = Duration::from_millis(100);
    config.recovery_interval = Duration::from_millis(300);
    let worker = TestWorker::start_with(config);
    Note::call(6002)
        .after(Duration::from_millis(500))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until(
        "the orphan and the scheduled job to run",
        Duration::from_secs(15),
        || async { ran(6001) && ran(6002) },
    )
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_too_deep_to_parse_is_listed_retried_and_deleted_by_its_jid_with_the_cli() {
    let redis = RedisServer::start_single();
    redis.cli(&["SADD", "gator:queues", "poison"]);
    let jid = "0193a5f0-0000-7000-8000-0000000dee03";
    let deep = format!("[{}{}]", "[".repeat(100_000), "]".repeat(100_000));
    let text = payload(jid, "note", &deep);
    let mut conn = redis.client().await;
    let push = || {
        redis::cmd("RPUSH")
            .arg("gator:{poison}:queue")
            .arg(&text)
            .clone()
    };
    push().query_async::<()>(&mut conn).await.unwrap();
    let cli = |args: &[&str]| {
        gator_tests::run_cli(env!("CARGO_BIN_EXE_gator-test-worker"), &redis.url(), args)
    };
    let taker = worker(&redis, "poison", 1);
    let entry = &dead(&redis, 1).await[0];
    taker.stop().await;
    assert_eq!(
        (entry["jid"].as_str(), entry["job"].as_str()),
        (Some(jid), Some("note"))
    );
    let listed = String::from_utf8(cli(&["dead", "list"]).stdout).unwrap();
    assert!(
        listed.contains(jid) && listed.contains("nested deeper than 127"),
        "{listed}"
    );
    // Retried by its jid: back on its queue as it came.
    assert!(cli(&["dead", "retry", jid]).status.success());
    assert_eq!(redis.cli(&["LINDEX", "gator:{poison}:queue", "0"]), text);
    assert_eq!(redis.cli(&["ZCARD", "gator:{poison}:dead"]), "0");
    // Dead again once a worker takes it; deleted by its jid.
    let taker = worker(&redis, "poison", 1);
    dead(&redis, 1).await;
    taker.stop().await;
    assert!(cli(&["dead", "delete", jid]).status.success());
    assert_eq!(redis.cli(&["ZCARD", "gator:{poison}:dead"]), "0");
    assert_eq!(redis.cli(&["LLEN", "gator:{poison}:queue"]), "0");
}
