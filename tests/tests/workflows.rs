//! Workflows: stages that fan out and back in across queues, parents' results read typed,
//! each failure policy, steps added to a running workflow, and its status step by step.

use gator_core::SetKind;
use gator_core::workflow::{StepState, WorkflowState};
use gator_core::{Context, Job, JobError, JobStatus, OnFailure, Step, Workflow, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

/// What the steps did, each line tagged with its test's tag.
static EVENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Tags whose `flaky` steps fail.
static BROKEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn note(line: String) {
    EVENTS.lock().unwrap().push(line);
}

fn events(tag: &str) -> Vec<String> {
    let prefix = format!("{tag} ");
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.starts_with(&prefix))
        .cloned()
        .collect()
}

/// Returns `n * 10` after a short nap, so that the steps of a stage overlap.
#[job(queue = "wf-a")]
async fn produce(tag: String, n: u64) -> Result<u64, JobError> {
    tokio::time::sleep(Duration::from_millis(40)).await;
    note(format!("{tag} produce {n}"));
    Ok(n * 10)
}

/// Reads its `produce` parents' results and records their sum.
#[job(queue = "wf-b")]
async fn gather(ctx: Context, tag: String) -> Result<u64, JobError> {
    let sum: u64 = ctx.parent_results_of::<u64>(Produce::NAME)?.iter().sum();
    note(format!("{tag} gather {sum} from {}", ctx.parents().len()));
    Ok(sum)
}

/// Fails while its tag is broken, without retries.
#[job(queue = "wf-c", retries = 0)]
async fn flaky(tag: String) -> Result<String, String> {
    if BROKEN.lock().unwrap().contains(&tag) {
        return Err(format!("{tag} is broken"));
    }
    note(format!("{tag} flaky ok"));
    Ok(format!("{tag}-flaky"))
}

/// Records its run, and its parent `produce`'s result read by name.
#[job(queue = "wf-a")]
async fn after(ctx: Context, tag: String) -> Result<(), JobError> {
    let produced: Option<u64> = ctx.parent_result(Produce::NAME)?;
    note(format!("{tag} after {produced:?}"));
    Ok(())
}

fn worker(redis: &RedisServer) -> TestWorker {
    TestWorker::start(&redis.url(), Some("wf-a,wf-b,wf-c"), 6)
}

async fn status_when(
    client: &gator_core::Client,
    id: &str,
    what: &str,
    ok: impl Fn(&gator_core::workflow::WorkflowStatus) -> bool,
) -> gator_core::workflow::WorkflowStatus {
    wait_until(what, Duration::from_secs(15), || async {
        client
            .workflow_status(id)
            .await
            .unwrap()
            .is_some_and(|s| ok(&s))
    })
    .await;
    client.workflow_status(id).await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_in_runs_once_after_every_parent_and_reads_their_results() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis);
    let id = Workflow::new()
        .then(Produce::call("fan".into(), 1))
        .then_all([
            Produce::call("fan".into(), 2),
            Produce::call("fan".into(), 3).queue("wf-c"),
            Produce::call("fan".into(), 4).queue("wf-b"),
        ])
        .then(Gather::call("fan".into()))
        .then(Step::new(After::call("fan".into())))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert!(
        id.ends_with("@wf-a"),
        "the workflow lives with its first step: {id}"
    );

    let status = status_when(&client, &id, "the workflow to finish", |s| {
        s.state == WorkflowState::Done
    })
    .await;
    let lines = events("fan");
    assert_eq!(lines[0], "fan produce 1", "the first stage runs first");
    let middle: HashSet<_> = lines[1..4].iter().cloned().collect();
    let expected: HashSet<_> = ["fan produce 2", "fan produce 3", "fan produce 4"]
        .map(String::from)
        .into();
    assert_eq!(middle, expected, "the fan-out runs before the fan-in");
    assert_eq!(
        lines[4..],
        ["fan gather 90 from 3", "fan after None"],
        "the fan-in runs once, with its three parents' results"
    );
    assert_eq!(status.steps.len(), 6);
    for step in &status.steps {
        assert!(
            matches!(step.state, StepState::Job(JobStatus::Done { .. })),
            "{step:?}"
        );
    }
    let gather = status.steps_of("gather").next().unwrap();
    assert_eq!(gather.result.as_deref(), Some("90"));
    assert_eq!(gather.parents.len(), 3);
    assert_eq!(gather.queue, "wf-b");
    assert_eq!(client.result::<u64>(&gather.jid).await.unwrap(), Some(90));
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_step_halts_its_workflow_and_retrying_it_resumes_it() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    BROKEN.lock().unwrap().push("halt".into());
    let worker = worker(&redis);
    let id = Workflow::new()
        .then(Produce::call("halt".into(), 1))
        .then_all([
            Step::new(Flaky::call("halt".into())),
            Step::new(Produce::call("halt".into(), 2)),
        ])
        .then(Gather::call("halt".into()))
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    let status = status_when(&client, &id, "the workflow to halt", |s| {
        s.state == WorkflowState::Halted
    })
    .await;
    let flaky = status.steps_of("flaky").next().unwrap().clone();
    assert!(
        matches!(&flaky.state, StepState::Job(JobStatus::Dead { error, .. }) if error.contains("halt is broken")),
        "{flaky:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let status = client.workflow_status(&id).await.unwrap().unwrap();
    assert_eq!(
        status.steps_of("gather").next().unwrap().state,
        StepState::Waiting,
        "the fan-in waits for the dead step"
    );
    assert!(!events("halt").iter().any(|e| e.contains("gather")));

    BROKEN.lock().unwrap().retain(|t| t != "halt");
    let admin = gator_core::Admin::new(client.clone());
    let entry = admin
        .find_job(SetKind::Dead, Some("wf-c"), &flaky.jid)
        .await
        .unwrap()
        .expect("the dead step in the dead set");
    assert!(admin.run_entry(&entry).await.unwrap());

    status_when(&client, &id, "the workflow to finish", |s| {
        s.state == WorkflowState::Done
    })
    .await;
    assert_eq!(
        events("halt").last().map(String::as_str),
        Some("halt gather 20 from 2"),
        "the fan-in ran once the retried step succeeded: {:?}",
        events("halt")
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_may_fail_lets_its_workflow_continue_without_it() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    BROKEN.lock().unwrap().push("cont".into());
    let worker = worker(&redis);
    let id = Workflow::new()
        .then_all([
            Step::new(Flaky::call("cont".into())).on_failure(OnFailure::Continue),
            Step::new(Produce::call("cont".into(), 5)),
        ])
        .then(Gather::call("cont".into()))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let status = status_when(&client, &id, "the workflow to finish", |s| {
        s.state == WorkflowState::Done
    })
    .await;
    assert!(events("cont").contains(&"cont gather 50 from 2".to_owned()));
    let flaky = status.steps_of("flaky").next().unwrap();
    assert_eq!(flaky.on_failure, OnFailure::Continue);
    assert!(matches!(
        flaky.state,
        StepState::Job(JobStatus::Dead { .. })
    ));
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_fails_its_workflow_cancels_the_waiting_steps() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    BROKEN.lock().unwrap().push("fail".into());
    let worker = worker(&redis);
    let id = Workflow::new()
        .then(Step::new(Flaky::call("fail".into())).on_failure(OnFailure::Fail))
        .then(Produce::call("fail".into(), 1))
        .then(Gather::call("fail".into()))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let status = status_when(&client, &id, "the workflow to fail", |s| {
        s.state == WorkflowState::Failed
    })
    .await;
    let states: Vec<_> = status.steps.iter().map(|s| s.state.clone()).collect();
    assert!(matches!(states[0], StepState::Job(JobStatus::Dead { .. })));
    assert_eq!(states[1..], [StepState::Cancelled, StepState::Cancelled]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(events("fail").is_empty(), "{:?}", events("fail"));
    let err = client
        .add_to_workflow(&id, Produce::call("fail".into(), 9), &[])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("failed"), "{err}");
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_added_to_a_workflow_run_after_the_steps_they_follow() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    BROKEN.lock().unwrap().push("add".into());
    let id = Workflow::new()
        .then(Produce::call("add".into(), 3))
        .then(Step::new(Flaky::call("add".into())))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let status = client.workflow_status(&id).await.unwrap().unwrap();
    let (first, second) = (status.steps[0].jid.clone(), status.steps[1].jid.clone());
    assert_eq!(status.steps[0].state, StepState::Job(JobStatus::Queued));
    assert_eq!(status.steps[1].state, StepState::Waiting);
    // Added before anything ran: after the first step, and after the second (which dies).
    let after_first = client
        .add_to_workflow(&id, After::call("add".into()), &[&first])
        .await
        .unwrap();
    let after_second = client
        .add_to_workflow(&id, After::call("add".into()), &[&second])
        .await
        .unwrap();
    let unknown = client
        .add_to_workflow(&id, After::call("add".into()), &["no-such-jid"])
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("no step"), "{unknown}");

    let worker = worker(&redis);
    status_when(&client, &id, "the dead step to halt it", |s| {
        s.state == WorkflowState::Halted
    })
    .await;
    wait_until(
        "the step after the first",
        Duration::from_secs(10),
        || async { events("add").contains(&"add after Some(30)".to_owned()) },
    )
    .await;
    let status = client.workflow_status(&id).await.unwrap().unwrap();
    let added: Vec<_> = status.steps.iter().filter(|s| s.job == "after").collect();
    assert_eq!(added.len(), 2);
    assert_eq!(added[0].jid, after_first);
    assert_eq!(added[1].jid, after_second);
    assert_eq!(added[1].state, StepState::Waiting);

    // A step added after one that already succeeded runs at once; a workflow that was done
    // runs again with it.
    let now = client
        .add_to_workflow(&id, Produce::call("add".into(), 7), &[&first])
        .await
        .unwrap();
    wait_until("the step added late", Duration::from_secs(10), || async {
        events("add").contains(&"add produce 7".to_owned())
    })
    .await;
    assert!(matches!(
        client.wait_for(&now, Duration::from_secs(5)).await.unwrap(),
        JobStatus::Done { .. }
    ));
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_malformed_workflow_ids_are_told_apart() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    assert_eq!(
        client.workflow_status("0190-no-such@wf-a").await.unwrap(),
        None
    );
    for bad in ["no-at-sign", "x@", "x@bad queue", "{x}@wf-a"] {
        let err = client.workflow_status(bad).await.unwrap_err();
        assert!(
            err.to_string().contains("not a workflow id"),
            "{bad}: {err}"
        );
    }
    let empty = Workflow::new()
        .through(&client)
        .dispatch()
        .await
        .unwrap_err();
    assert!(matches!(empty, gator_core::Error::EmptyWorkflow));
}
