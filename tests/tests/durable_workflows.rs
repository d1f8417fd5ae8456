//! Durable jobs in workflows and chains, on a real Redis with in-process workers (on a cluster
//! with `GATOR_TEST_REDIS=cluster`): a sleeping workflow step lets its siblings finish and its
//! result reaches its children; a sleeping chain step resumes and its chain goes on.

use gator_core::workflow::{Workflow, WorkflowState};
use gator_core::{Chain, Context, JobError, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_worker::{QueueSelection, WorkerConfig};
use std::sync::Mutex;
use std::time::Duration;

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

/// Notes a step, sleeps `millis`, notes that it woke; returns `millis`.
#[job(queue = "dw")]
async fn nap(ctx: Context, tag: String, millis: u64) -> Result<u64, JobError> {
    ctx.step("before", || async {
        note(&tag, "nap before");
        Ok::<_, JobError>(())
    })
    .await?;
    ctx.sleep(Duration::from_millis(millis)).await?;
    note(&tag, "nap after");
    Ok(millis)
}

/// Notes that it ran.
#[job(queue = "dw")]
async fn quick(tag: String) {
    note(&tag, "quick");
}

/// Sums its parents' results (what each `nap` step returned) and notes the sum.
#[job(queue = "dw")]
async fn sum_naps(ctx: Context, tag: String) -> Result<u64, JobError> {
    let mut naps: Vec<u64> = ctx
        .parent_results_of::<u64>("nap")
        .map_err(|e| JobError::new(e.to_string()))?;
    naps.sort_unstable();
    note(&tag, format!("sum of {naps:?}"));
    Ok(naps.iter().sum())
}

fn worker(redis: &RedisServer, concurrency: usize) -> TestWorker {
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec!["dw".into()]);
    config.concurrency = concurrency;
    config.poll_interval = Duration::from_millis(100);
    config.shutdown_timeout = Duration::from_secs(2);
    TestWorker::start_with(config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_workflow_step_lets_its_sibling_finish_and_its_result_reaches_its_child() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let tag = "workflow";
    // One processor: the sibling runs only if the sleeper does not hold it.
    let worker = worker(&redis, 1);
    let id = Workflow::new()
        .then_all([Nap::call(tag.into(), 3_000), Nap::call(tag.into(), 0)])
        .then(SumNaps::call(tag.into()))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until(
        "the short sibling to finish",
        Duration::from_secs(20),
        || async { events(tag).iter().filter(|e| *e == "nap after").count() == 1 },
    )
    .await;
    assert!(
        !events(tag).iter().any(|e| e.starts_with("sum")),
        "the child waits for the sleeper"
    );
    wait_until(
        "the workflow to finish",
        Duration::from_secs(20),
        || async {
            client
                .workflow_status(&id)
                .await
                .unwrap()
                .is_some_and(|s| s.state == WorkflowState::Done)
        },
    )
    .await;
    worker.stop().await;
    let events = events(tag);
    assert_eq!(events.last().unwrap(), "sum of [0, 3000]", "{events:?}");
    assert_eq!(
        events.iter().filter(|e| *e == "nap before").count(),
        2,
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_chain_step_resumes_and_its_chain_goes_on() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let tag = "chain";
    let worker = worker(&redis, 1);
    Chain::new()
        .then(Nap::call(tag.into(), 1_000))
        .then(Quick::call(tag.into()))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the chain to end", Duration::from_secs(20), || async {
        events(tag).contains(&"quick".to_owned())
    })
    .await;
    worker.stop().await;
    assert_eq!(events(tag), ["nap before", "nap after", "quick"]);
}
