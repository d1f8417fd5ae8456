//! Unique jobs and debounce (issue 15, part 4), against a real Redis (and a cluster with
//! `GATOR_TEST_REDIS=cluster`): a duplicate dispatch returns the existing jid, flagged; a
//! custom key; the lock released at start, at success (kept through running and retries), on
//! death, on cancel, and by its TTL after its worker was SIGKILLed; debounce replaces the
//! pending job's args and pushes back its due time, and runs it once with the last ones; a
//! burst of concurrent dispatches makes one job.

use gator_core::unique::{Dispatched, default_key};
use gator_core::{Client, JobStatus, SetKind, job};
use gator_tests::{Notes, RedisServer, TestWorker, client, wait_until};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// What the jobs did, by tag.
static NOTES: Notes = Notes::new();

fn notes(tag: &str) -> Vec<String> {
    NOTES.tagged(tag)
}

fn note(text: String) {
    NOTES.push(text);
}

/// Unique for a minute, until it succeeds.
#[job(queue = "uq", unique_for = "1m")]
async fn report(day: u32) {
    note(format!("report {day}"));
}

/// Lets the `gated` jobs finish.
static GATE_OPEN: AtomicBool = AtomicBool::new(false);

/// Unique until it starts; runs until the gate opens.
#[job(queue = "uq", unique_for = "1m", unique_until = "start")]
async fn gated(tag: String) {
    note(format!("{tag} started"));
    while !GATE_OPEN.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

static FLAKY_RUNS: AtomicU32 = AtomicU32::new(0);

/// Unique until success; its first attempt fails, and it retries 1.5 s later.
#[job(queue = "uq", unique_for = "1m", backoff = ["1500ms"])]
async fn flaky(tag: String) -> Result<(), String> {
    if FLAKY_RUNS.fetch_add(1, Ordering::SeqCst) == 0 {
        note(format!("{tag} failed"));
        return Err("the first attempt fails on purpose".into());
    }
    note(format!("{tag} done"));
    Ok(())
}

/// Unique, and dies at its first failure.
#[job(queue = "uq", unique_for = "1m", retries = 0)]
async fn doomed(tag: String) -> Result<(), String> {
    Err(format!("{tag} dies on purpose"))
}

/// Debounced by 1.5 s; the test keys it by document.
#[job(queue = "uq", debounce = "1500ms")]
async fn rebuild(doc: u32, version: u32) {
    note(format!("rebuild {doc} v{version}"));
}

/// The same wire name as the test worker binary's job, which runs it for `millis`.
#[job]
async fn sleepy(id: u64, millis: u64) {
    let _ = (id, millis);
}

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

async fn status(client: &Client, jid: &str) -> String {
    client.status(jid).await.unwrap().name().to_owned()
}

async fn wait_for_state(client: &Client, jid: &str, state: &str) {
    wait_until(
        &format!("{jid} {state}"),
        Duration::from_secs(20),
        || async { status(client, jid).await == state },
    )
    .await;
}

async fn holder(client: &Client, queue: &str, key: &str) -> Option<String> {
    client.unique_holder(queue, key).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_dispatch_returns_the_existing_jid_flagged_as_a_duplicate() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let first = Report::call(1)
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let Dispatched::New(jid) = first.clone() else {
        panic!("the first dispatch stores a job: {first:?}");
    };
    let again = Report::call(1)
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert_eq!(again, Dispatched::Duplicate(jid.clone()));
    assert!(again.is_duplicate());
    // The plain dispatch returns the holder's jid too, and stores nothing.
    assert_eq!(
        Report::call(1).through(&client).dispatch().await.unwrap(),
        jid
    );
    let in_a_minute = Report::call(1)
        .after(Duration::from_secs(60))
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert_eq!(in_a_minute, Dispatched::Duplicate(jid.clone()));
    // A batch: its duplicates name the holder.
    let batch = client
        .dispatch_many([Report::call(1), Report::call(2), Report::call(2)])
        .await
        .unwrap();
    assert_eq!(batch[0], jid);
    assert_ne!(batch[1], jid);
    assert_eq!(batch[1], batch[2]);
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("uq")
            .await
            .unwrap(),
        2
    );
    let key = default_key("report", &serde_json::json!([1]));
    assert_eq!(holder(&client, "uq", &key).await, Some(jid.clone()));
    assert!(matches!(
        client.status(&jid).await.unwrap(),
        JobStatus::Queued
    ));

    // Each runs once, and its success releases its lock: the same args make a new job.
    let worker = TestWorker::start(&redis.url(), Some("uq"), 2);
    wait_for_state(&client, &jid, "done").await;
    wait_for_state(&client, &batch[1], "done").await;
    let mut ran = notes("report");
    ran.sort(); // two processors: either may finish first
    assert_eq!(ran, ["report 1", "report 2"]);
    assert_eq!(holder(&client, "uq", &key).await, None);
    let after = Report::call(1)
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!after.is_duplicate(), "{after:?}");
    assert_ne!(after.jid(), jid);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_key_makes_other_args_a_duplicate_on_its_queue_only() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let first = Report::call(10)
        .unique_key("customer-7")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let other_args = Report::call(11)
        .unique_key("customer-7")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert_eq!(other_args, Dispatched::Duplicate(first.jid().to_owned()));
    assert_eq!(
        holder(&client, "uq", "customer-7").await.as_deref(),
        Some(first.jid())
    );
    // The lock is the queue's: the same key on another queue is another lock.
    let elsewhere = Report::call(10)
        .unique_key("customer-7")
        .queue("uq-other")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!elsewhere.is_duplicate());
    // A key of one's own makes a job unique even if its type is not.
    let plain_a = Sleepy::call(1, 0)
        .unique_key("nightly")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let plain_b = Sleepy::call(2, 0)
        .unique_key("nightly")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert_eq!(plain_b, Dispatched::Duplicate(plain_a.jid().to_owned()));
    // An empty key is refused, and nothing is stored.
    let before = gator_core::Admin::new(client.clone())
        .queue_len("uq")
        .await
        .unwrap();
    assert!(
        Report::call(12)
            .unique_key("")
            .through(&client)
            .dispatch_unique()
            .await
            .is_err()
    );
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("uq")
            .await
            .unwrap(),
        before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_start_releases_the_lock_as_the_job_starts() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let first = Gated::call("gate-a".into())
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let key = default_key("gated", &serde_json::json!(["gate-a"]));
    assert_eq!(
        holder(&client, "uq", &key).await.as_deref(),
        Some(first.jid())
    );
    let worker = TestWorker::start(&redis.url(), Some("uq"), 2);
    wait_until("the first job started", Duration::from_secs(15), || async {
        notes("gate-a").len() == 1
    })
    .await;
    // Running, and its lock is gone: a duplicate is a new job, which starts beside it.
    wait_until("the lock released", Duration::from_secs(5), || async {
        holder(&client, "uq", &key).await.is_none()
    })
    .await;
    let second = Gated::call("gate-a".into())
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!second.is_duplicate(), "{second:?}");
    wait_until(
        "the second job started",
        Duration::from_secs(15),
        || async { notes("gate-a").len() == 2 },
    )
    .await;
    GATE_OPEN.store(true, Ordering::SeqCst);
    wait_for_state(&client, first.jid(), "done").await;
    wait_for_state(&client, second.jid(), "done").await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_success_keeps_the_lock_through_a_failure_and_its_retry_and_releases_it_at_success() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let key = default_key("flaky", &serde_json::json!(["flaky"]));
    let first = Flaky::call("flaky".into())
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let jid = first.jid().to_owned();
    let worker = TestWorker::start(&redis.url(), Some("uq"), 2);
    wait_for_state(&client, &jid, "retrying").await;
    assert_eq!(holder(&client, "uq", &key).await, Some(jid.clone()));
    let during_retry = Flaky::call("flaky".into())
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert_eq!(during_retry, Dispatched::Duplicate(jid.clone()));
    wait_for_state(&client, &jid, "done").await;
    assert_eq!(holder(&client, "uq", &key).await, None);
    assert_eq!(notes("flaky"), ["flaky failed", "flaky done"]);
    worker.stop().await;
}

/// Unique until success; its attempt ends waiting for a reply.
#[job(queue = "uq", unique_for = "1m")]
async fn asks(ctx: gator_core::Context, tag: String) {
    ctx.await_reply(format!("{tag}:answer"), Duration::from_secs(60));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_waiting_for_a_reply_keeps_its_lock_until_the_reply_makes_it_done() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let key = default_key("asks", &serde_json::json!(["q1"]));
    let first = Asks::call("q1".into())
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), Some("uq"), 1);
    wait_for_state(&client, first.jid(), "awaiting").await;
    assert_eq!(
        holder(&client, "uq", &key).await.as_deref(),
        Some(first.jid())
    );
    let during = Asks::call("q1".into())
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert_eq!(during, Dispatched::Duplicate(first.jid().to_owned()));
    client.reply("q1:answer", &42).await.unwrap();
    wait_for_state(&client, first.jid(), "done").await;
    assert_eq!(holder(&client, "uq", &key).await, None);
    worker.stop().await;
}

/// Unique, on a queue under flow control (its priority makes it so).
#[job(queue = "uf", unique_for = "1m", priority = 5)]
async fn prioritized(n: u32) {
    note(format!("prioritized {n}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_job_on_a_controlled_queue_releases_its_lock_and_units_at_success() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let first = Prioritized::call(1)
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let dup = Prioritized::call(1)
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert_eq!(dup, Dispatched::Duplicate(first.jid().to_owned()));
    let worker = TestWorker::start(&redis.url(), Some("uf"), 1);
    wait_for_state(&client, first.jid(), "done").await;
    let key = default_key("prioritized", &serde_json::json!([1]));
    assert_eq!(holder(&client, "uf", &key).await, None);
    // Its units were freed with it: the next jobs run on the one processor.
    let next = Prioritized::call(1)
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!next.is_duplicate(), "{next:?}");
    let other = Prioritized::call(2)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_for_state(&client, next.jid(), "done").await;
    wait_for_state(&client, &other, "done").await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_job_releases_its_lock() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let key = default_key("doomed", &serde_json::json!(["d"]));
    let first = Doomed::call("d".into())
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), Some("uq"), 1);
    wait_for_state(&client, first.jid(), "dead").await;
    assert_eq!(holder(&client, "uq", &key).await, None);
    let again = Doomed::call("d".into())
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!again.is_duplicate(), "{again:?}");
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_or_deleted_job_releases_its_lock() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let key = default_key("report", &serde_json::json!([5]));
    let scheduled = Report::call(5)
        .after(Duration::from_secs(60))
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!scheduled.is_duplicate());
    assert_eq!(
        holder(&client, "uq", &key).await.as_deref(),
        Some(scheduled.jid())
    );
    client.cancel(scheduled.jid()).await.unwrap();
    assert_eq!(status(&client, scheduled.jid()).await, "cancelled");
    assert_eq!(holder(&client, "uq", &key).await, None);
    let again = Report::call(5)
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!again.is_duplicate(), "{again:?}");

    // Deleted from the scheduled set by an admin: gone, and so is its lock.
    let key = default_key("report", &serde_json::json!([6]));
    let scheduled = Report::call(6)
        .after(Duration::from_secs(60))
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(
        gator_core::Admin::new(client.clone())
            .delete_job(SetKind::Scheduled, Some("uq"), scheduled.jid())
            .await
            .unwrap()
    );
    assert_eq!(holder(&client, "uq", &key).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ttl_releases_a_lock_whose_worker_was_sigkilled() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let first = Sleepy::call(7, 60_000)
        .unique_key("killed")
        .unique_for(Duration::from_secs(3))
        .queue("uk")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    let mut worker = gator_tests::spawn_worker_process_with(WORKER, &redis.url(), "uk", 1, &[]);
    wait_for_state(&client, first.jid(), "running").await;
    worker.kill().unwrap();
    worker.wait().unwrap();
    // The job is lost in flight with its dead worker (no other worker recovers it here); its
    // lock still holds, until its TTL ends it on Redis's clock.
    let during = Sleepy::call(7, 0)
        .unique_key("killed")
        .queue("uk")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert_eq!(during, Dispatched::Duplicate(first.jid().to_owned()));
    wait_until(
        "the lock's TTL ran out",
        Duration::from_secs(10),
        || async { holder(&client, "uk", "killed").await.is_none() },
    )
    .await;
    let after = Sleepy::call(7, 0)
        .unique_key("killed")
        .queue("uk")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!after.is_duplicate(), "{after:?}");
}

/// The scheduled entries of `queue`: (due time, payload).
async fn scheduled(client: &Client, queue: &str) -> Vec<(serde_json::Value, u64)> {
    let entries: Vec<(String, u64)> = redis::cmd("ZRANGE")
        .arg(client.keys().scheduled(queue))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut client.connection())
        .await
        .unwrap();
    entries
        .into_iter()
        .map(|(payload, due)| (serde_json::from_str(&payload).unwrap(), due))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debounce_replaces_the_args_pushes_back_the_due_time_and_runs_once_with_the_last() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let first = Rebuild::call(1, 1)
        .unique_key("doc-1")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!first.is_duplicate());
    let [(payload, first_due)] = scheduled(&client, "uq").await.try_into().unwrap();
    assert_eq!(payload["args"], serde_json::json!([1, 1]));
    let mut last_due = first_due;
    for version in [2, 3] {
        let before = client.redis_time().await.unwrap();
        let again = Rebuild::call(1, version)
            .unique_key("doc-1")
            .through(&client)
            .dispatch_unique()
            .await
            .unwrap();
        assert_eq!(again, Dispatched::Duplicate(first.jid().to_owned()));
        let [(payload, due)] = scheduled(&client, "uq").await.try_into().unwrap();
        assert_eq!(payload["jid"], first.jid());
        assert_eq!(payload["args"], serde_json::json!([1, version]));
        assert!(due >= before + 1500, "due {due}, dispatched at {before}");
        assert!(due >= last_due);
        last_due = due;
    }
    assert_eq!(
        status(&client, first.jid()).await,
        "scheduled",
        "still waiting for its quiet time"
    );

    let worker = TestWorker::start(&redis.url(), Some("uq"), 2);
    wait_for_state(&client, first.jid(), "done").await;
    assert_eq!(notes("rebuild"), ["rebuild 1 v3"]);
    // Once it has run, the next dispatch makes a new debounced job.
    let later = Rebuild::call(1, 4)
        .unique_key("doc-1")
        .through(&client)
        .dispatch_unique()
        .await
        .unwrap();
    assert!(!later.is_duplicate(), "{later:?}");
    wait_for_state(&client, later.jid(), "done").await;
    assert_eq!(notes("rebuild"), ["rebuild 1 v3", "rebuild 1 v4"]);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_burst_of_dispatches_from_many_tasks_makes_one_job() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { Report::call(99).through(&client).dispatch_unique().await })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.unwrap().unwrap());
    }
    let new: Vec<&Dispatched> = results.iter().filter(|d| !d.is_duplicate()).collect();
    assert_eq!(new.len(), 1, "{results:?}");
    assert!(results.iter().all(|d| d.jid() == new[0].jid()));
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("uq")
            .await
            .unwrap(),
        1
    );
}
