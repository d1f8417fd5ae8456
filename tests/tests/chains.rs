//! Chains: steps run one after another across queues, halt on a dead step, resume when it is
//! retried, and leave no keys behind.

use gator_core::SetKind;
use gator_core::store::{Batch, Done, Fetch, Presence, Settle};
use gator_core::{Chain, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static EVENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static FRAGILE_BROKEN: AtomicBool = AtomicBool::new(true);

fn events(tag: &str) -> Vec<String> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.starts_with(tag))
        .cloned()
        .collect()
}

#[job(queue = "c1")]
async fn step(tag: String, n: u32) {
    EVENTS.lock().unwrap().push(format!("{tag} start {n}"));
    tokio::time::sleep(Duration::from_millis(30)).await;
    EVENTS.lock().unwrap().push(format!("{tag} end {n}"));
}

#[job(queue = "c2", retries = 0)]
async fn fragile(tag: String) -> Result<(), String> {
    if FRAGILE_BROKEN.load(Ordering::SeqCst) {
        return Err("still broken".into());
    }
    EVENTS.lock().unwrap().push(format!("{tag} fragile ok"));
    Ok(())
}

fn chain_keys(redis: &RedisServer) -> String {
    redis.cli(&["KEYS", "gator:*:chain:*"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chain_steps_run_in_order_across_queues_and_leave_no_keys() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("c1,c2"), 4);
    Chain::new()
        .then(Step::call("a".into(), 1))
        .then(Step::call("a".into(), 2).queue("c2"))
        .then(Step::call("a".into(), 3))
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    wait_until("the last step", Duration::from_secs(10), || async {
        events("a").len() == 6
    })
    .await;
    assert_eq!(
        events("a"),
        vec![
            "a start 1",
            "a end 1",
            "a start 2",
            "a end 2",
            "a start 3",
            "a end 3"
        ]
    );
    assert_eq!(
        chain_keys(&redis),
        "",
        "the chain's list is gone once the chain finished"
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_step_halts_the_chain_and_retrying_it_resumes_the_chain() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("c1,c2"), 4);
    Chain::new()
        .then(Step::call("b".into(), 1))
        .then(Fragile::call("b".into()))
        .then(Step::call("b".into(), 3))
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    wait_until(
        "the fragile step to die",
        Duration::from_secs(10),
        || async { redis.cli(&["ZCARD", "gator:{c2}:dead"]) == "1" },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        events("b"),
        vec!["b start 1", "b end 1"],
        "the step after the dead one must not run"
    );
    assert_ne!(chain_keys(&redis), "", "the rest of the chain waits");

    FRAGILE_BROKEN.store(false, Ordering::SeqCst);
    let dead = redis.cli(&["ZRANGE", "gator:{c2}:dead", "0", "0"]);
    let jid = serde_json::from_str::<serde_json::Value>(&dead).unwrap()["jid"]
        .as_str()
        .unwrap()
        .to_owned();
    let admin = gator_core::Admin::new(client.clone());
    let entry = admin
        .find_job(SetKind::Dead, Some("c2"), &jid)
        .await
        .unwrap()
        .expect("the dead step");
    assert!(admin.run_entry(&entry).await.unwrap());

    wait_until("the chain to finish", Duration::from_secs(10), || async {
        events("b").len() == 5
    })
    .await;
    assert_eq!(events("b")[2..], ["b fragile ok", "b start 3", "b end 3"]);
    assert_eq!(chain_keys(&redis), "");
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_dispatched_later_waits_in_the_scheduled_set_with_its_steps_attached() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let chain = Chain::new()
        .then(Step::call("c".into(), 1))
        .then(Step::call("c".into(), 2));
    chain
        .at(std::time::SystemTime::now() + Duration::from_secs(1))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(redis.cli(&["ZCARD", "gator:{c1}:scheduled"]), "1");
    assert_eq!(redis.cli(&["LLEN", "gator:{c1}:queue"]), "0");
    let keys = chain_keys(&redis);
    assert_eq!(
        redis.cli(&["LLEN", &keys]),
        "1",
        "the second step waits in the chain list"
    );

    let worker = TestWorker::start(&redis.url(), Some("c1"), 2);
    wait_until("both steps", Duration::from_secs(10), || async {
        events("c").len() == 4
    })
    .await;
    assert_eq!(
        events("c"),
        vec!["c start 1", "c end 1", "c start 2", "c end 2"]
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acking_a_step_twice_enqueues_the_next_step_once() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let chain = Chain::new()
        .then(Step::call("d".into(), 1))
        .then(Step::call("d".into(), 2))
        .then(Step::call("d".into(), 3));
    chain.through(&client).dispatch().await.unwrap();
    let keys = client.keys();
    Presence::new(client.connection(), keys)
        .renew_lease("c1", "p", Duration::from_secs(60))
        .await
        .unwrap();
    let Batch::Jobs(mut jobs) = Fetch::new(client.connection(), keys)
        .fetch_batch("c1", "p", 1)
        .await
        .unwrap()
    else {
        panic!("process p holds a lease on c1");
    };
    let job = jobs.pop().expect("the first step");
    let first: gator_core::Payload = serde_json::from_slice(&job.raw).unwrap();
    let link = first.chain.expect("a chain step carries its link");
    let link = serde_json::to_string(&link).unwrap();
    let mut settle = Settle::new(client.connection(), keys, None);
    let done = Done {
        result: None,
        attempts: 1,
        at_ms: 0,
        retention: Duration::from_secs(60),
        keyed: false,
    };
    assert!(settle.ack(&job, &done, Some(link.as_str())).await.unwrap());
    assert!(
        !settle.ack(&job, &done, Some(link.as_str())).await.unwrap(),
        "a second ack is a no-op"
    );
    assert_eq!(
        redis.cli(&["LLEN", "gator:{c1}:queue"]),
        "1",
        "the second step, once"
    );
    assert_eq!(
        redis.cli(&["LLEN", &chain_keys(&redis)]),
        "1",
        "the third still waits"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_chain_and_a_time_past_the_horizon_are_refused() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let err = Chain::new().through(&client).dispatch().await.unwrap_err();
    assert!(err.to_string().contains("at least one step"), "{err}");
    let far = std::time::SystemTime::now() + Duration::from_secs(10 * 365 * 24 * 3600);
    let err = Step::call("e".into(), 1)
        .at(far)
        .through(&client)
        .dispatch()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("more than 5 years ahead"), "{err}");
    let err = Step::call("e".into(), 1)
        .at(f64::NAN)
        .through(&client)
        .dispatch()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a finite time"), "{err}");
    assert_eq!(redis.cli(&["DBSIZE"]), "0", "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_step_given_a_due_time_of_its_own_is_refused_and_nothing_is_stored() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let later = Step::call("e".into(), 2).after(Duration::from_secs(60));
    let chain = Chain::new().then(Step::call("e".into(), 1)).then(later);
    let err = chain.through(&client).dispatch().await.unwrap_err();
    assert!(err.to_string().contains("give the chain its time"), "{err}");
    let err = Chain::new()
        .then(Step::call("e".into(), 1))
        .then(Step::call("e".into(), 2))
        .at(std::time::SystemTime::now() + Duration::from_secs(10 * 365 * 24 * 3600))
        .through(&client)
        .dispatch()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("more than 5 years ahead"), "{err}");
    assert_eq!(redis.cli(&["DBSIZE"]), "0", "nothing was written");
}

#[job(queue = "c3", retries = 0)]
async fn doomed(n: u32) -> Result<(), gator_core::JobError> {
    Err(gator_core::JobError::discard(format!(
        "step {n} cannot succeed"
    )))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_step_trimmed_or_deleted_from_the_dead_set_takes_its_chains_waiting_steps_with_it() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    config.queues = "c3".parse().unwrap();
    config.dead_cap.max_jobs = 1;
    let worker = TestWorker::start_with(config);
    // Two chains whose first step dies; their rest waits, in lists under the first queue.
    let chain = |n: u32| {
        Chain::new()
            .then(Doomed::call(n))
            .then(Step::call(format!("t{n}"), 1))
    };
    let first = chain(1).through(&client).dispatch().await.unwrap();
    wait_until(
        "the first chain's step to die",
        Duration::from_secs(10),
        || async { redis.cli(&["ZCARD", "gator:{c3}:dead"]) == "1" },
    )
    .await;
    assert!(chain_keys(&redis).contains(&first), "the first chain waits");
    let second = chain(2).through(&client).dispatch().await.unwrap();
    // The second dead step pushes the first out of a dead set capped at one entry.
    wait_until(
        "the first chain's list to go with its trimmed step",
        Duration::from_secs(10),
        || async {
            let keys = chain_keys(&redis);
            !keys.contains(&first) && keys.contains(&second)
        },
    )
    .await;
    worker.stop().await;
    // Deleting the second dead step by hand takes its chain's list too.
    let dead = redis.zset_json("gator:{c3}:dead").await;
    let jid = dead[0]["jid"].as_str().unwrap();
    assert!(
        gator_core::Admin::new(client.clone())
            .delete_job(SetKind::Dead, Some("c3"), jid)
            .await
            .unwrap()
    );
    assert_eq!(chain_keys(&redis), "", "no chain list is left behind");
}

#[job(queue = "c1")]
async fn produce(n: u64) -> Result<u64, String> {
    Ok(n * 2)
}

/// Asks for its parent's result, which chains do not pass.
#[job(queue = "c1")]
async fn consume(ctx: gator_core::Context) -> Result<(), gator_core::JobError> {
    let _: Option<u64> = ctx.parent_result(<Produce as gator_core::Job>::NAME)?;
    Ok(())
}

/// A chain step that asks for its parent's result is told, loudly, that chains pass none
/// (and how to get one): it goes to the dead set unretried with that reason, not on with a
/// silent `None`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_step_that_asks_for_its_parents_result_is_told_chains_pass_none() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("c1"), 2);
    Chain::new()
        .then(Produce::call(21))
        .then(Consume::call())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the step to die", Duration::from_secs(10), || async {
        redis.cli(&["ZCARD", "gator:{c1}:dead"]) == "1"
    })
    .await;
    worker.stop().await;
    let entry = redis.cli(&["ZRANGE", "gator:{c1}:dead", "0", "0"]);
    assert!(entry.contains("chains pass no results"), "{entry}");
    assert!(entry.contains("Workflow::new().then(a).then(b)"), "{entry}");
    assert!(entry.contains("\"attempt\":1"), "not retried: {entry}");
}
