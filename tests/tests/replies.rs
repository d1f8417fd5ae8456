//! Jobs that wait for a reply: the reply after the wait, before it, duplicated, never (the
//! retry policy applies with a timeout error); a handler job and a workflow's next step read it
//! typed; a wait survives its worker's restart; a waiting job can be cancelled.

use gator_core::reply::Delivery;
use gator_core::workflow::WorkflowState;
use gator_core::{Cancellation, Client, Context, Job, JobError, JobStatus, Workflow, job};
use gator_tests::{Notes, RedisServer, TestWorker, client, wait_until};
use serde::{Deserialize, Serialize};
use std::time::Duration;

static NOTES: Notes = Notes::new();

fn notes(tag: &str) -> Vec<String> {
    NOTES.tagged(tag)
}

fn note(line: String) {
    NOTES.push(line);
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Confirmation {
    order: u64,
    accepted: bool,
}

/// Sends an order (notes it) and waits for its confirmation, handled by `confirm`.
#[job(queue = "rq")]
async fn place(ctx: Context, tag: String, order: u64, wait_ms: u64) -> Result<(), JobError> {
    note(format!("{tag} placed {order} attempt {}", ctx.attempt()));
    ctx.await_reply_then(
        format!("{tag}:{order}"),
        Duration::from_millis(wait_ms),
        Confirm::call(tag, order),
    );
    Ok(())
}

#[job(queue = "rq")]
async fn confirm(ctx: Context, tag: String, order: u64) -> Result<(), JobError> {
    let reply: Option<Confirmation> = ctx.reply()?;
    note(format!("{tag} confirmed {order}: {reply:?}"));
    Ok(())
}

/// A workflow step that waits for a reply, without a handler.
#[job(queue = "rq", retries = 0)]
async fn ask(ctx: Context, tag: String) -> Result<(), JobError> {
    ctx.await_reply(format!("{tag}:ask"), Duration::from_secs(60));
    Ok(())
}

/// The step after `ask`: reads its reply as its parent's result.
#[job(queue = "rq2")]
async fn use_answer(ctx: Context, tag: String) -> Result<(), JobError> {
    let answer: Option<Confirmation> = ctx.parent_result(Ask::NAME)?;
    note(format!("{tag} answer {answer:?}"));
    Ok(())
}

/// Waits briefly; retried once, 200 ms later, then dead.
#[job(queue = "rq", retries = 1, backoff = ["200ms"])]
async fn impatient(ctx: Context, tag: String) -> Result<(), JobError> {
    note(format!("{tag} waits, attempt {}", ctx.attempt()));
    ctx.await_reply(format!("{tag}:never"), Duration::from_millis(300));
    Ok(())
}

fn worker(redis: &RedisServer) -> TestWorker {
    let mut config = gator_worker::config::WorkerConfig::new(redis.url());
    config.queues = gator_worker::config::QueueSelection::Strict(vec!["rq".into(), "rq2".into()]);
    config.concurrency = 4;
    // Timeouts are found by the recovery pass: often, so the timeout test is short.
    config.recovery_interval = Duration::from_millis(200);
    TestWorker::start_with(config)
}

async fn wait_for_state(client: &Client, jid: &str, state: &str) -> JobStatus {
    wait_until(
        &format!("{jid} {state}"),
        Duration::from_secs(15),
        || async { client.status(jid).await.unwrap().name() == state },
    )
    .await;
    client.status(jid).await.unwrap()
}

/// Waits until the wait for `key` is registered in the replies' slot. A job is recorded
/// `awaiting` in its queue's slot first and its wait reaches the replies' slot through the
/// queue's outbox a moment later (two slots on a cluster: not one script); a reply in between
/// is kept and matched when the wait registers, which `a_reply_before_the_wait_is_kept_and_matched`
/// covers. The tests that reply "after the wait" wait for the registration itself.
async fn wait_for_wait(client: &Client, key: &str) {
    let waits = client.keys().reply_waits();
    wait_until(
        &format!("the wait for {key} to be registered"),
        Duration::from_secs(15),
        || async {
            redis::cmd("HEXISTS")
                .arg(&waits)
                .arg(key)
                .query_async::<bool>(&mut client.connection())
                .await
                .unwrap()
        },
    )
    .await;
}

fn yes(order: u64) -> Confirmation {
    Confirmation {
        order,
        accepted: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_after_the_wait_reaches_the_handler_typed() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis);
    let jid = Place::call("after".into(), 1, 60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    match wait_for_state(&client, &jid, "awaiting").await {
        JobStatus::AwaitingReply { key, .. } => assert_eq!(key, "after:1"),
        other => panic!("{other:?}"),
    }
    wait_for_wait(&client, "after:1").await;
    assert_eq!(
        client.reply("after:1", &yes(1)).await.unwrap(),
        Delivery::Delivered
    );
    wait_until("the handler", Duration::from_secs(10), || async {
        notes("after").len() == 2
    })
    .await;
    assert_eq!(
        notes("after")[1],
        "after confirmed 1: Some(Confirmation { order: 1, accepted: true })"
    );
    assert_eq!(
        client.result::<Confirmation>(&jid).await.unwrap(),
        Some(yes(1)),
        "the waiting job is done, with the reply as its result"
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_before_the_wait_is_kept_and_matched() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    assert_eq!(
        client.reply("before:2", &yes(2)).await.unwrap(),
        Delivery::Kept
    );
    let worker = worker(&redis);
    let jid = Place::call("before".into(), 2, 60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_for_state(&client, &jid, "done").await;
    wait_until("the handler", Duration::from_secs(10), || async {
        notes("before").len() == 2
    })
    .await;
    assert!(notes("before")[1].contains("accepted: true"));
    let stats = client.reply_stats().await.unwrap();
    assert_eq!((stats.kept, stats.delivered), (1, 1));
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_reply_wins_and_duplicates_are_dropped_and_counted() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis);
    let jid = Place::call("dup".into(), 3, 60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_for_state(&client, &jid, "awaiting").await;
    wait_for_wait(&client, "dup:3").await;
    let first = client.reply("dup:3", &yes(3)).await.unwrap();
    let second = client
        .reply(
            "dup:3",
            &Confirmation {
                order: 3,
                accepted: false,
            },
        )
        .await
        .unwrap();
    assert_eq!((first, second), (Delivery::Delivered, Delivery::Duplicate));
    // Duplicates before a wait too: the second kept reply is dropped.
    assert_eq!(
        client.reply("dup:4", &yes(4)).await.unwrap(),
        Delivery::Kept
    );
    assert_eq!(
        client.reply("dup:4", &yes(4)).await.unwrap(),
        Delivery::Duplicate
    );
    wait_until("the handler", Duration::from_secs(10), || async {
        notes("dup").len() == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        notes("dup").len(),
        2,
        "the handler ran once: {:?}",
        notes("dup")
    );
    assert!(
        notes("dup")[1].contains("accepted: true"),
        "the first reply won"
    );
    assert_eq!(client.reply_stats().await.unwrap().duplicates, 2);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reply_in_time_fails_the_attempt_under_its_retry_policy() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis);
    let jid = Impatient::call("late".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let status = wait_for_state(&client, &jid, "dead").await;
    match status {
        JobStatus::Dead {
            attempts, error, ..
        } => {
            assert_eq!(attempts, 2, "one retry");
            assert!(error.contains(r#"no reply to "late:never""#), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        notes("late"),
        ["late waits, attempt 1", "late waits, attempt 2"],
        "each attempt ran once; the timeouts were not runs"
    );
    assert_eq!(client.reply_stats().await.unwrap().timeouts, 2);
    // A reply now finds no one waiting: it is kept for a later wait.
    assert_eq!(
        client.reply("late:never", &yes(0)).await.unwrap(),
        Delivery::Kept
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_goes_on_with_the_reply_as_the_steps_result() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis);
    let id = Workflow::new()
        .then(Ask::call("wf".into()))
        .then(UseAnswer::call("wf".into()))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let ask = client.workflow_status(&id).await.unwrap().unwrap().steps[0]
        .jid
        .clone();
    wait_for_state(&client, &ask, "awaiting").await;
    client.reply("wf:ask", &yes(9)).await.unwrap();
    wait_until("the next step", Duration::from_secs(10), || async {
        !notes("wf").is_empty()
    })
    .await;
    assert_eq!(
        notes("wf"),
        ["wf answer Some(Confirmation { order: 9, accepted: true })"]
    );
    wait_until("the workflow done", Duration::from_secs(10), || async {
        client.workflow_status(&id).await.unwrap().unwrap().state == WorkflowState::Done
    })
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_survives_its_workers_restart_and_can_be_cancelled() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis);
    let kept = Place::call("restart".into(), 5, 60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let cancelled = Place::call("restart".into(), 6, 60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_for_state(&client, &kept, "awaiting").await;
    wait_for_state(&client, &cancelled, "awaiting").await;
    wait_for_wait(&client, "restart:5").await;
    worker.stop().await;

    // No worker runs: the reply completes the job from here, and its handler waits queued.
    assert_eq!(
        client.reply("restart:5", &yes(5)).await.unwrap(),
        Delivery::Delivered
    );
    wait_for_state(&client, &kept, "done").await;
    assert_eq!(
        client.cancel(&cancelled).await.unwrap(),
        Cancellation::Removed
    );
    assert!(matches!(
        client.status(&cancelled).await.unwrap(),
        JobStatus::Cancelled { .. }
    ));
    let worker = self::worker(&redis);
    wait_until("the handler", Duration::from_secs(10), || async {
        notes("restart")
            .iter()
            .any(|n| n.starts_with("restart confirmed 5"))
    })
    .await;
    // The cancelled job's key has no waiter: a reply to it is only kept.
    assert_eq!(
        client.reply("restart:6", &yes(6)).await.unwrap(),
        Delivery::Kept
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!notes("restart").iter().any(|n| n.contains("confirmed 6")));
    worker.stop().await;
}
