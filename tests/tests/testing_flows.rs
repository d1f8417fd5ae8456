//! The testing mode (`gator_core::testing`) for chains and workflows, without Redis: fake mode
//! records a chain's or workflow's first steps and releases the next ones as their parents end
//! in `drain`, with results, failure policies and retries; inline mode runs them at their
//! dispatch.

use gator_core::workflow::{OnFailure, Step, Workflow};
use gator_core::{Chain, Context, JobError, State, testing};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Returns `n * 10`, logging its run, its chain and its workflow.
#[gator_core::job(queue = "steps")]
async fn part(ctx: Context, State(log): State<Log>, n: u32) -> Result<u32, JobError> {
    log.0.lock().unwrap().push(format!(
        "part {n} chain={} workflow={}",
        ctx.chain_id().is_some(),
        ctx.workflow_id().is_some()
    ));
    Ok(n * 10)
}

/// Fails, logging that it ran. No retries: it ends failed at its first failure, so a drain
/// applies its chain's or workflow's failure policy at once.
#[gator_core::job(queue = "steps", retries = 0)]
async fn broken(State(log): State<Log>, n: u32) -> Result<(), String> {
    log.0.lock().unwrap().push(format!("broken {n}"));
    Err(format!("step {n} broke"))
}

/// Fails its first `fails` attempts, logging each, with one retry 15 s after a failure.
#[gator_core::job(queue = "steps", retries = 1, backoff = ["15s"])]
async fn flaky(ctx: Context, State(log): State<Log>, fails: u32) -> Result<u32, String> {
    log.0
        .lock()
        .unwrap()
        .push(format!("flaky attempt {}", ctx.attempt()));
    if ctx.attempt() <= fails {
        return Err(format!("attempt {} failed", ctx.attempt()));
    }
    Ok(5)
}

/// The fan-in: logs the results of its parents.
#[gator_core::job(queue = "steps")]
async fn total(ctx: Context, State(log): State<Log>) -> Result<u32, JobError> {
    let mut parts: Vec<u32> = ctx
        .parent_results_of::<u32>("part")
        .map_err(|e| JobError::new(e.to_string()))?;
    parts.sort_unstable();
    log.0.lock().unwrap().push(format!(
        "total of {parts:?} from {} parents",
        ctx.parents().len()
    ));
    Ok(parts.iter().sum())
}

#[tokio::test]
async fn a_fake_chain_records_its_first_step_and_drain_runs_the_rest_in_order() {
    let fake = testing::fake();
    let log = Log::default();
    fake.state(log.clone());
    Chain::new()
        .then(Part::call(1))
        .then(Part::call(2))
        .then(Part::call(3))
        .dispatch()
        .await
        .expect("a chain in fake mode needs no Redis");
    assert_eq!(
        fake.dispatched::<Part>(),
        [1],
        "only the first step is queued"
    );

    let drained = fake.drain().await;
    assert_eq!(drained.ran, 3);
    assert_eq!(
        log.lines(),
        [
            "part 1 chain=true workflow=false",
            "part 2 chain=true workflow=false",
            "part 3 chain=true workflow=false"
        ]
    );
}

#[tokio::test]
async fn a_failed_step_halts_its_fake_chain() {
    let fake = testing::fake();
    let log = Log::default();
    fake.state(log.clone());
    Chain::new()
        .then(Part::call(1))
        .then(Broken::call(2))
        .then(Part::call(3))
        .dispatch()
        .await
        .unwrap();
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 1);
    assert_eq!(drained.failed.len(), 1);
    assert_eq!(drained.failed[0].1, "step 2 broke");
    assert_eq!(
        log.lines(),
        ["part 1 chain=true workflow=false", "broken 2"]
    );
}

#[tokio::test]
async fn a_fake_workflow_fans_out_then_in_with_its_parents_results() {
    let fake = testing::fake();
    let log = Log::default();
    fake.state(log.clone());
    let id = Workflow::new()
        .then(Part::call(1))
        .then_all([Part::call(2), Part::call(3)])
        .then(Total::call())
        .dispatch()
        .await
        .unwrap();
    assert!(id.ends_with("@steps"), "{id}");
    assert_eq!(fake.jobs().len(), 1, "only the first stage is queued");

    let drained = fake.drain().await;
    assert_eq!(drained.ran, 4, "{:?}", drained.failed);
    assert_eq!(
        log.lines(),
        [
            "part 1 chain=false workflow=true",
            "part 2 chain=false workflow=true",
            "part 3 chain=false workflow=true",
            "total of [20, 30] from 2 parents"
        ]
    );
}

#[tokio::test]
async fn fake_workflow_failure_policies_halt_continue_or_fail() {
    for (policy, expected) in [
        (
            OnFailure::Halt,
            vec!["part 1 chain=false workflow=true", "broken 2"],
        ),
        (
            OnFailure::Continue,
            vec![
                "part 1 chain=false workflow=true",
                "broken 2",
                "total of [10] from 2 parents",
            ],
        ),
        (
            OnFailure::Fail,
            vec!["part 1 chain=false workflow=true", "broken 2"],
        ),
    ] {
        let fake = testing::fake();
        let log = Log::default();
        fake.state(log.clone());
        Workflow::new()
            .then_all([
                Step::new(Part::call(1)),
                Step::new(Broken::call(2)).on_failure(policy),
            ])
            .then(Total::call())
            .dispatch()
            .await
            .unwrap();
        let drained = fake.drain().await;
        assert_eq!(log.lines(), expected, "{policy:?}");
        assert_eq!(drained.failed.len(), 1, "{policy:?}");
    }
}

#[tokio::test]
async fn inline_runs_a_chain_and_a_workflow_at_their_dispatch() {
    let inline = testing::inline();
    let log = Log::default();
    inline.state(log.clone());
    Chain::new()
        .then(Part::call(1))
        .then(Part::call(2))
        .dispatch()
        .await
        .unwrap();
    Workflow::new()
        .then_all([Part::call(4), Part::call(5)])
        .then(Total::call())
        .dispatch()
        .await
        .unwrap();
    assert_eq!(
        log.lines(),
        [
            "part 1 chain=true workflow=false",
            "part 2 chain=true workflow=false",
            "part 4 chain=false workflow=true",
            "part 5 chain=false workflow=true",
            "total of [40, 50] from 2 parents"
        ]
    );

    let failed = Chain::new()
        .then(Broken::call(7))
        .then(Part::call(8))
        .dispatch()
        .await;
    match failed {
        Err(gator_core::Error::InlineJobFailed { job, reason }) => {
            assert_eq!(job, "broken");
            assert_eq!(reason, "step 7 broke");
        }
        other => panic!("expected the chain's dispatch to fail, got {other:?}"),
    }
    assert!(
        !log.lines()
            .contains(&"part 8 chain=true workflow=false".to_owned())
    );
}

#[tokio::test]
async fn a_chain_step_with_retries_left_is_retried_before_the_chain_goes_on() {
    let fake = testing::fake();
    let log = Log::default();
    fake.state(log.clone());
    Chain::new()
        .then(Part::call(1))
        .then(Flaky::call(1))
        .then(Part::call(3))
        .dispatch()
        .await
        .unwrap();
    let drained = fake.drain().await;
    assert_eq!((drained.ran, drained.retried.len()), (1, 1));
    assert!(
        drained.failed.is_empty(),
        "a step with retries left has not failed its chain"
    );
    assert_eq!(
        log.lines(),
        ["part 1 chain=true workflow=false", "flaky attempt 1"]
    );
    assert_eq!(fake.jobs().len(), 1, "its retry waits");

    let drained = fake.advance(Duration::from_secs(15)).drain().await;
    assert_eq!(drained.ran, 2, "the retry, then the step after it");
    assert_eq!(
        log.lines()[2..],
        ["flaky attempt 2", "part 3 chain=true workflow=false"]
    );
}

#[tokio::test]
async fn a_failure_policy_applies_only_once_the_step_is_out_of_retries() {
    let fake = testing::fake();
    let log = Log::default();
    fake.state(log.clone());
    Workflow::new()
        .then_all([
            Step::new(Part::call(1)),
            Step::new(Flaky::call(2)).on_failure(OnFailure::Continue),
        ])
        .then(Total::call())
        .dispatch()
        .await
        .unwrap();
    let drained = fake.drain().await;
    assert_eq!((drained.ran, drained.retried.len()), (1, 1));
    assert!(
        !log.lines().iter().any(|line| line.starts_with("total")),
        "the fan-in waits for the step's retry: {:?}",
        log.lines()
    );

    let drained = fake.advance(Duration::from_secs(15)).drain().await;
    assert_eq!(drained.failed.len(), 1, "its one retry failed too");
    assert_eq!(drained.failed[0].1, "attempt 2 failed");
    assert_eq!(
        log.lines()[1..],
        [
            "flaky attempt 1",
            "flaky attempt 2",
            "total of [10] from 2 parents"
        ]
    );
}
