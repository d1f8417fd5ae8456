//! Durable jobs (`ctx.checkpoint`, `ctx.resume`, `ctx.step`, `ctx.sleep`, `ctx.iterate`): a
//! job's later runs start from what an earlier run saved, a step that succeeded never runs
//! again, and a sleeping or yielding job holds no worker. In-process workers on a private
//! Redis; on a cluster with `GATOR_TEST_REDIS=cluster` (every key carries the queue's tag).
//! The kills are in `durable_crashes.rs`.

use gator_core::context::durable::{Iteration, Next};
use gator_core::{Context, JobError, JobStatus, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_worker::{QueueSelection, WorkerConfig};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the jobs below did, by test: `(tag, event)` in order.
static EVENTS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn note(tag: &str, event: impl Into<String>) {
    EVENTS.lock().unwrap().push((tag.to_owned(), event.into()));
}

fn events(tag: &str) -> Vec<String> {
    let events = EVENTS.lock().unwrap();
    events
        .iter()
        .filter(|(t, _)| t == tag)
        .map(|(_, e)| e.clone())
        .collect()
}

/// Works through `items` rows, saving the next row after each; fails once at `fail_at` on
/// its first attempt.
#[job(queue = "durable_cp", retries = 3, backoff = ["100ms"])]
async fn import_rows(ctx: Context, tag: String, items: u32, fail_at: u32) -> Result<u32, JobError> {
    let mut row: u32 = ctx.resume().unwrap_or(0);
    note(&tag, format!("start {row} attempt {}", ctx.attempt()));
    while row < items {
        if row == fail_at && ctx.attempt() == 1 {
            return Err(JobError::new("the database went away"));
        }
        note(&tag, format!("row {row}"));
        row += 1;
        ctx.checkpoint(&row).await?;
    }
    Ok(row)
}

/// Charges, then sends a receipt that fails on the first attempt.
#[job(queue = "durable_steps", retries = 3, backoff = ["100ms"])]
async fn charge_then_receipt(ctx: Context, tag: String) -> Result<String, JobError> {
    let charge: String = ctx
        .step("charge", || async {
            note(&tag, "charged");
            Ok::<_, JobError>(format!("ch_{}", ctx.attempt()))
        })
        .await?;
    ctx.step("receipt", || async {
        if ctx.attempt() == 1 {
            return Err(JobError::new("the mail server said no"));
        }
        note(&tag, format!("receipt for {charge}"));
        Ok(())
    })
    .await?;
    Ok(charge)
}

/// Notes a step, sleeps `millis`, notes another.
#[job(queue = "durable_sleep")]
async fn nap(ctx: Context, tag: String, millis: u64) -> Result<(), JobError> {
    ctx.step("before", || async {
        note(&tag, "before");
        Ok::<_, JobError>(())
    })
    .await?;
    ctx.sleep(Duration::from_millis(millis)).await?;
    note(&tag, "after");
    Ok(())
}

/// Notes that it ran.
#[job(queue = "durable_sleep")]
async fn quick(tag: String) {
    note(&tag, "quick");
}

/// Iterates over `items` items of `item_ms` each in slices of `slice_ms`.
#[job(queue = "durable_iter")]
async fn walk(
    ctx: Context,
    tag: String,
    items: u32,
    item_ms: u64,
    slice_ms: u64,
) -> Result<(), JobError> {
    note(&tag, format!("run attempt {}", ctx.attempt()));
    let plan = Iteration::default()
        .checkpoint_every_items(1)
        .max_slice(Duration::from_millis(slice_ms));
    ctx.iterate_with(plan, 0u32, |item| {
        let tag = tag.clone();
        async move {
            if item >= items {
                return Ok::<_, JobError>(Next::Done);
            }
            tokio::time::sleep(Duration::from_millis(item_ms)).await;
            note(&tag, format!("item {item}"));
            Ok(Next::Continue(item + 1))
        }
    })
    .await
}

fn worker(redis: &RedisServer, queue: &str, concurrency: usize) -> TestWorker {
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec![queue.into()]);
    config.concurrency = concurrency;
    config.poll_interval = Duration::from_millis(200);
    config.shutdown_timeout = Duration::from_secs(2);
    TestWorker::start_with(config)
}

async fn done(client: &gator_core::Client, jid: &str) {
    wait_until("the job to finish", Duration::from_secs(20), || async {
        matches!(client.status(jid).await.unwrap(), JobStatus::Done { .. })
    })
    .await;
}

/// How many times each event happened.
fn counts(events: &[String]) -> HashMap<&str, usize> {
    let mut counts = HashMap::new();
    for event in events {
        *counts.entry(event.as_str()).or_default() += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_job_resumes_from_its_last_checkpoint_and_repeats_no_row() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let tag = "checkpoint";
    let jid = ImportRows::call(tag.into(), 10, 6)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "durable_cp", 2);
    done(&client, &jid).await;
    worker.stop().await;

    let events = events(tag);
    assert_eq!(events[0], "start 0 attempt 1");
    assert!(events.contains(&"start 6 attempt 2".to_owned()), "{events:?}");
    let rows: Vec<_> = events.iter().filter(|e| e.starts_with("row")).collect();
    let expected: Vec<_> = (0..10).map(|r| format!("row {r}")).collect();
    assert_eq!(rows, expected.iter().collect::<Vec<_>>(), "each row once");
    assert_eq!(client.result::<u32>(&jid).await.unwrap(), Some(10));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_succeeded_returns_its_saved_result_on_the_retry_without_running() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let tag = "steps";
    let jid = ChargeThenReceipt::call(tag.into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "durable_steps", 1);
    done(&client, &jid).await;
    worker.stop().await;

    assert_eq!(events(tag), ["charged", "receipt for ch_1"]);
    let result = client.result::<String>(&jid).await.unwrap();
    assert_eq!(result.as_deref(), Some("ch_1"), "the first charge's id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_job_holds_no_worker_reads_suspended_and_resumes_after_its_sleep() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let tag = "sleep";
    let sleeper = Nap::call(tag.into(), 1500)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    // One processor: the quick job can only run if the sleeper does not hold it.
    let worker = worker(&redis, "durable_sleep", 1);
    wait_until("the sleeper to suspend", Duration::from_secs(10), || async {
        matches!(
            client.status(&sleeper).await.unwrap(),
            JobStatus::Suspended { .. }
        )
    })
    .await;
    let suspended_at = Instant::now();
    let JobStatus::Suspended { reason, .. } = client.status(&sleeper).await.unwrap() else {
        unreachable!()
    };
    assert_eq!(reason, "sleep 1");
    let quick = Quick::call(tag.into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    done(&client, &quick).await;
    assert!(
        suspended_at.elapsed() < Duration::from_millis(1500),
        "the quick job ran while the sleeper slept"
    );
    done(&client, &sleeper).await;
    worker.stop().await;

    assert_eq!(events(tag), ["before", "quick", "after"]);
    let JobStatus::Done { attempts, .. } = client.status(&sleeper).await.unwrap() else {
        unreachable!()
    };
    assert_eq!(attempts, 1, "a sleep is not an attempt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iteration_yields_its_slices_and_goes_on_from_its_cursor_with_every_item_once() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let tag = "iterate";
    let jid = Walk::call(tag.into(), 30, 20, 150)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "durable_iter", 1);
    done(&client, &jid).await;
    worker.stop().await;

    let events = events(tag);
    let runs = events.iter().filter(|e| e.starts_with("run")).count();
    assert!(runs >= 3, "30 items of 20 ms in slices of 150 ms: {events:?}");
    assert!(
        events.iter().filter(|e| e.starts_with("run")).all(|e| e == "run attempt 1"),
        "a slice is not an attempt: {events:?}"
    );
    let items = counts(&events);
    for item in 0..30 {
        assert_eq!(items.get(format!("item {item}").as_str()), Some(&1), "{events:?}");
    }
}
