//! Durable jobs (`ctx.checkpoint`, `ctx.step`, `ctx.sleep`, `ctx.iterate`) in the testing mode
//! (`gator_core::testing`), without Redis: a drain keeps what a run saved with the job, so its
//! retry replays its steps and resumes from its checkpoint; a sleep parks it on the fake clock
//! until `advance` reaches its wake time; a yielded slice is drained again. Inline, a sleep
//! resumes at once. Waits for replies: `testing_durable_replies.rs`.

use gator_core::context::durable::{Iteration, Next};
use gator_core::workflow::Workflow;
use gator_core::{Chain, Context, JobError, State, testing};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, line: impl Into<String>) {
        self.0.lock().unwrap().push(line.into());
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A fake with a fresh log as its jobs' state.
fn fake_with_log() -> (testing::Fake, Log) {
    let fake = testing::fake();
    let log = Log::default();
    fake.state(log.clone());
    (fake, log)
}

/// Charges (a step), then sends a receipt (a step) that fails on the first attempt; one retry
/// 15 s later.
#[gator_core::job(queue = "durable", retries = 1, backoff = ["15s"])]
async fn charge_then_receipt(ctx: Context, State(log): State<Log>) -> Result<String, JobError> {
    let charge: String = ctx
        .step("charge", || async {
            log.push(format!("charged on attempt {}", ctx.attempt()));
            Ok::<_, JobError>(format!("ch_{}", ctx.attempt()))
        })
        .await?;
    ctx.step("receipt", || async {
        if ctx.attempt() == 1 {
            return Err(JobError::new("the mail server said no"));
        }
        log.push(format!("receipt for {charge} on attempt {}", ctx.attempt()));
        Ok(())
    })
    .await?;
    Ok(charge)
}

/// Works through `rows` rows, saving the next row after each; fails at `fail_at` on its first
/// attempt. One retry a minute later.
#[gator_core::job(queue = "durable", retries = 1, backoff = ["1m"])]
async fn import_rows(
    ctx: Context,
    State(log): State<Log>,
    rows: u32,
    fail_at: u32,
) -> Result<u32, JobError> {
    let mut row: u32 = ctx.resume().unwrap_or(0);
    log.push(format!("start at {row} attempt {}", ctx.attempt()));
    while row < rows {
        if row == fail_at && ctx.attempt() == 1 {
            return Err(JobError::new("the database went away"));
        }
        log.push(format!("row {row}"));
        row += 1;
        ctx.checkpoint(&row).await?;
    }
    Ok(row)
}

/// A step, a sleep of `minutes`, then a note; returns `minutes`.
#[gator_core::job(queue = "durable")]
async fn nap(ctx: Context, State(log): State<Log>, minutes: u64) -> Result<u64, JobError> {
    ctx.step("before", || async {
        log.push("before");
        Ok::<_, JobError>(())
    })
    .await?;
    ctx.sleep(Duration::from_secs(minutes * 60)).await?;
    log.push(format!("after {minutes} min, attempt {}", ctx.attempt()));
    Ok(minutes)
}

/// Sleeps until `at_ms` (Unix ms), then notes it.
#[gator_core::job(queue = "durable")]
async fn wake_at(ctx: Context, State(log): State<Log>, at_ms: u64) -> Result<(), JobError> {
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(at_ms);
    ctx.sleep_until(at).await?;
    log.push("woke");
    Ok(())
}

/// Logs its run.
#[gator_core::job(queue = "durable")]
async fn quick(State(log): State<Log>, n: u32) {
    log.push(format!("quick {n}"));
}

/// Iterates over `items` items, one item a slice.
#[gator_core::job(queue = "durable")]
async fn walk(ctx: Context, State(log): State<Log>, items: u32) -> Result<(), JobError> {
    log.push("run");
    let plan = Iteration::default().max_slice(Duration::ZERO);
    ctx.iterate_with(plan, 0u32, |item| {
        let log = log.clone();
        async move {
            if item >= items {
                return Ok::<_, JobError>(Next::Done);
            }
            log.push(format!("item {item}"));
            Ok(Next::Continue(item + 1))
        }
    })
    .await
}

/// Returns its parents' results (minutes slept) summed.
#[gator_core::job(queue = "durable")]
async fn sum_naps(ctx: Context, State(log): State<Log>) -> Result<u64, JobError> {
    let mut naps: Vec<u64> = ctx
        .parent_results_of::<u64>("nap")
        .map_err(|e| JobError::new(e.to_string()))?;
    naps.sort_unstable();
    log.push(format!("sum of {naps:?}"));
    Ok(naps.iter().sum())
}

/// Whether a drain made no run at all.
fn nothing_ran(drained: &testing::Drained) -> bool {
    drained.ran == 0
        && drained.retried.is_empty()
        && drained.failed.is_empty()
        && drained.suspended.is_empty()
}

fn count(lines: &[String], line: &str) -> usize {
    lines.iter().filter(|l| *l == line).count()
}

#[tokio::test]
async fn a_retry_in_a_drain_gets_its_steps_results_back_and_runs_no_step_twice() {
    let (fake, log) = fake_with_log();
    ChargeThenReceipt::call().dispatch().await.unwrap();

    let drained = fake.drain().await;
    assert_eq!(drained.retried.len(), 1, "{drained:?}");
    fake.advance(Duration::from_secs(15));
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 1, "{drained:?}");
    assert_eq!(
        log.lines(),
        ["charged on attempt 1", "receipt for ch_1 on attempt 2"],
        "the retry replays the charge's result and does not charge again"
    );
}

#[tokio::test]
async fn a_retry_in_a_drain_resumes_from_its_last_checkpoint() {
    let (fake, log) = fake_with_log();
    ImportRows::call(5, 3).dispatch().await.unwrap();

    assert_eq!(fake.drain().await.retried.len(), 1);
    fake.advance(MINUTE);
    assert_eq!(fake.drain().await.ran, 1);
    let lines = log.lines();
    assert_eq!(
        lines,
        [
            "start at 0 attempt 1",
            "row 0",
            "row 1",
            "row 2",
            "start at 3 attempt 2",
            "row 3",
            "row 4"
        ]
    );
}

#[tokio::test]
async fn a_sleeping_job_is_parked_on_the_fake_clock_until_advance_reaches_its_wake_time() {
    let (fake, log) = fake_with_log();
    Nap::call(60).dispatch().await.unwrap();
    let slept_at = fake.now();

    let drained = fake.drain().await;
    assert_eq!(
        (drained.ran, drained.suspended.len()),
        (0, 1),
        "{drained:?}"
    );
    assert_eq!(drained.suspended[0].1, "sleep 1");
    let parked = fake.jobs();
    assert_eq!(parked.len(), 1);
    assert_eq!(parked[0].suspended.as_deref(), Some("sleep 1"));
    assert_eq!(parked[0].due, Some(slept_at + HOUR));
    assert_eq!(parked[0].attempt, 1, "a sleep is no attempt");

    assert!(nothing_ran(&fake.drain().await));
    fake.advance(59 * MINUTE);
    assert!(nothing_ran(&fake.drain().await), "not due yet");
    assert_eq!(log.lines(), ["before"]);

    fake.advance(MINUTE);
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 1, "{drained:?}");
    assert!(fake.jobs().is_empty());
    assert_eq!(
        log.lines(),
        ["before", "after 60 min, attempt 1"],
        "its step ran once, and the run after the sleep goes on past it"
    );
}

#[tokio::test]
async fn sleep_until_parks_a_job_until_its_time_and_a_time_past_runs_it_again_at_once() {
    let (fake, log) = fake_with_log();
    let at = fake.now() + 2 * HOUR;
    let at_ms = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    WakeAt::call(at_ms).dispatch().await.unwrap();
    assert_eq!(fake.drain().await.suspended.len(), 1);
    assert_eq!(fake.jobs()[0].due, Some(at));

    fake.advance(3 * HOUR);
    assert_eq!(fake.drain().await.ran, 1);
    assert_eq!(log.lines(), ["woke"]);

    // Its time is already past: parked for a moment, due at once.
    WakeAt::call(at_ms).dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert_eq!(
        (drained.suspended.len(), drained.ran),
        (1, 1),
        "{drained:?}"
    );
    assert_eq!(log.lines(), ["woke", "woke"]);
}

#[tokio::test]
async fn a_sleeping_job_holds_nothing_and_other_jobs_drain_while_it_sleeps() {
    let (fake, log) = fake_with_log();
    Nap::call(10).dispatch().await.unwrap();
    Quick::call(1).dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert_eq!((drained.ran, drained.suspended.len()), (1, 1));
    assert_eq!(log.lines(), ["before", "quick 1"]);
    fake.advance(10 * MINUTE);
    assert_eq!(fake.drain().await.ran, 1);
    assert_eq!(
        log.lines(),
        ["before", "quick 1", "after 10 min, attempt 1"]
    );
}

#[tokio::test]
async fn an_iteration_yields_its_slices_and_one_drain_runs_them_all_each_item_once() {
    let (fake, log) = fake_with_log();
    Walk::call(3).dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 1, "{drained:?}");
    let reasons: Vec<&str> = drained.suspended.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(reasons, ["slice 1", "slice 2", "slice 3"]);
    assert_eq!(
        log.lines(),
        ["run", "item 0", "run", "item 1", "run", "item 2", "run"],
        "each slice goes on from the cursor the one before saved"
    );
    assert!(fake.jobs().is_empty());
}

#[tokio::test]
async fn a_sleeping_workflow_step_lets_its_sibling_finish_and_its_result_reaches_the_fan_in() {
    let (fake, log) = fake_with_log();
    Workflow::new()
        .then_all([Nap::call(30), Nap::call(0)])
        .then(SumNaps::call())
        .dispatch()
        .await
        .unwrap();
    let drained = fake.drain().await;
    // Both nap steps sleep (a sleep of 0 wakes at once, in this drain).
    assert_eq!(drained.ran, 1, "the sibling finished: {drained:?}");
    assert!(log.lines().contains(&"after 0 min, attempt 1".to_owned()));
    assert!(fake.dispatched::<SumNaps>().is_empty(), "the fan-in waits");

    fake.advance(30 * MINUTE);
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 2, "{drained:?}");
    assert_eq!(log.lines().last().unwrap(), "sum of [0, 30]");
}

#[tokio::test]
async fn a_sleeping_chain_step_resumes_and_its_chain_goes_on() {
    let (fake, log) = fake_with_log();
    Chain::new()
        .then(Quick::call(1))
        .then(Nap::call(5))
        .then(Quick::call(2))
        .dispatch()
        .await
        .unwrap();
    let drained = fake.drain().await;
    assert_eq!((drained.ran, drained.suspended.len()), (1, 1));
    assert!(fake.dispatched::<Quick>().is_empty(), "the chain waits");
    fake.advance(5 * MINUTE);
    assert_eq!(fake.drain().await.ran, 2);
    assert_eq!(
        log.lines(),
        ["quick 1", "before", "after 5 min, attempt 1", "quick 2"]
    );
}

#[tokio::test]
async fn inline_a_sleeping_job_resumes_at_once_and_its_dispatch_returns_when_it_ends() {
    let inline = testing::inline();
    let log = Log::default();
    inline.state(log.clone());
    // A deadline far below the hour a real sleep would take.
    tokio::time::timeout(Duration::from_secs(30), Nap::call(60).dispatch())
        .await
        .expect("an inline sleep does not wait for real")
        .unwrap();
    let lines = log.lines();
    assert_eq!(lines, ["before", "after 60 min, attempt 1"]);
    assert_eq!(count(&lines, "before"), 1, "its step ran once");
}

#[tokio::test]
async fn inline_an_iterating_job_runs_all_its_slices_at_its_dispatch() {
    let inline = testing::inline();
    let log = Log::default();
    inline.state(log.clone());
    Walk::call(2).dispatch().await.unwrap();
    assert_eq!(log.lines(), ["run", "item 0", "run", "item 1", "run"]);
}

#[tokio::test]
async fn inline_a_sleeping_chain_step_resumes_and_the_chain_ends_at_its_dispatch() {
    let inline = testing::inline();
    let log = Log::default();
    inline.state(log.clone());
    Chain::new()
        .then(Nap::call(5))
        .then(Quick::call(2))
        .dispatch()
        .await
        .unwrap();
    assert_eq!(log.lines(), ["before", "after 5 min, attempt 1", "quick 2"]);
}
