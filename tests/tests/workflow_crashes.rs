//! Workflows when a process dies at each step of a hand-off. A step's success crosses from
//! its queue's slot to its workflow's home slot and on to its children's queues in separate
//! steps (see `gator_core::workflow`); each test leaves Redis exactly as a process killed after one
//! of them would (the scripts it had run, nothing after), then checks that the rest happens
//! once: a parent counted once, a child pushed once, and recovery finishing what was left.
//! The workflows' queues are on three slots, so on a cluster (`scripts/test-cluster`) every
//! hand-off crosses nodes.

use gator_core::payload::PayloadDocument;
use gator_core::store::crash::{self as scripts, split_id};
use gator_core::store::{Batch, Done, Fetch, Fetched, Presence, Recovery, Settle};
use gator_core::workflow::StepState;
use gator_core::{Client, JobStatus, Workflow, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::time::Duration;

#[job(queue = "wx")]
async fn part(n: u64) -> Result<u64, String> {
    Ok(n)
}

#[job(queue = "wz")]
async fn join_parts(ctx: gator_core::Context) -> Result<u64, gator_core::JobError> {
    Ok(ctx.parent_results::<u64>()?.iter().sum())
}

const RETENTION: Duration = Duration::from_secs(600);

/// Fetches the one job waiting on `queue` into process `p`'s in-flight list.
async fn fetch_one(client: &Client, queue: &str) -> Fetched {
    let keys = client.keys();
    Presence::new(client.connection(), keys)
        .renew_lease(queue, "p", Duration::from_secs(60))
        .await
        .unwrap();
    let Batch::Jobs(mut jobs) = Fetch::new(client.connection(), keys)
        .fetch_batch(queue, "p", 1)
        .await
        .unwrap()
    else {
        panic!("process p holds a lease on {queue}");
    };
    jobs.pop().unwrap_or_else(|| panic!("a job on {queue}"))
}

/// The outbox record a success of `job` returning `result` writes.
fn record_of(job: &Fetched, result: &str) -> String {
    let doc = PayloadDocument::parse(&job.raw).unwrap();
    Settle::handoff_on_success(&doc, Some(result), RETENTION)
        .expect("a workflow step has a hand-off")
}

fn done(result: &str) -> Done<'_> {
    Done {
        result: Some(result),
        attempts: 1,
        at_ms: 0,
        retention: RETENTION,
        keyed: false,
    }
}

fn queued(redis: &RedisServer, queue: &str) -> String {
    redis.cli(&["LLEN", &format!("gator:{{{queue}}}:queue")])
}

/// A fan-in of two parents on `wx` and `wy`, joined on `wz`; returns its id.
async fn fan_in(client: &Client) -> String {
    Workflow::new()
        .then_all([Part::call(1), Part::call(2).queue("wy")])
        .then(JoinParts::call())
        .through(client)
        .dispatch()
        .await
        .unwrap()
}

async fn join_state(client: &Client, id: &str) -> StepState {
    let status = client.workflow_status(id).await.unwrap().unwrap();
    status.steps_of("join_parts").next().unwrap().state.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parents_success_reported_twice_is_counted_once() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut settle = Settle::new(client.connection(), client.keys(), None);
    let id = fan_in(&client).await;

    let first = fetch_one(&client, "wx").await;
    let record = record_of(&first, "1");
    let first_done = done("1");
    let acked = settle.ack(&first, &first_done, Some(&record));
    assert!(acked.await.unwrap());
    // The same report again, as a drain of the outbox racing the ack's own hand-off, or a
    // recovered copy of the step succeeding too, would carry it.
    for _ in 0..2 {
        settle.advance("wx", &record).await.unwrap();
    }
    assert_eq!(queued(&redis, "wz"), "0", "one parent of two has succeeded");
    assert_eq!(join_state(&client, &id).await, StepState::Waiting);

    let second = fetch_one(&client, "wy").await;
    let record = record_of(&second, "2");
    let second_done = done("2");
    let acked = settle.ack(&second, &second_done, Some(&record));
    assert!(acked.await.unwrap());
    settle.advance("wy", &record).await.unwrap();
    assert_eq!(queued(&redis, "wz"), "1", "the fan-in, once");
    assert_eq!(
        join_state(&client, &id).await,
        StepState::Job(JobStatus::Queued)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_recorded_by_a_process_that_died_is_carried_on_by_recovery() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let (keys, mut conn) = (client.keys().clone(), client.connection());
    let id = fan_in(&client).await;
    // Both parents succeeded in processes that died right after `ack.lua`: each success and
    // its report are in its queue's outbox, and nothing went on.
    for queue in ["wx", "wy"] {
        let job = fetch_one(&client, queue).await;
        let record = record_of(&job, "5");
        let settled: i64 = scripts::ACK
            .key(keys.inflight(queue, "p"))
            .key(keys.outbox(queue))
            .arg(&job.raw)
            .arg(&record)
            .arg(done("5").tail())
            .arg(RETENTION.as_millis() as u64)
            .invoke_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(settled, 1);
    }
    assert_eq!(join_state(&client, &id).await, StepState::Waiting);
    // Their reports sit in the outboxes, but each parent reads done with its result.
    let status = client.workflow_status(&id).await.unwrap().unwrap();
    let parents: Vec<_> = status.steps_of("part").map(|s| s.result.clone()).collect();
    assert_eq!(parents, [Some("5".to_owned()), Some("5".to_owned())]);

    let worker = TestWorker::start(&redis.url(), Some("wx,wy,wz"), 2);
    wait_until("the fan-in to run", Duration::from_secs(15), || async {
        matches!(
            join_state(&client, &id).await,
            StepState::Job(JobStatus::Done { .. })
        )
    })
    .await;
    let status = client.workflow_status(&id).await.unwrap().unwrap();
    let join = status.steps_of("join_parts").next().unwrap();
    assert_eq!(
        join.result.as_deref(),
        Some("10"),
        "5 + 5, each parent once"
    );
    for queue in ["wx", "wy"] {
        assert_eq!(redis.cli(&["LLEN", &keys.outbox(queue)]), "0");
    }
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_released_by_a_process_that_died_is_pushed_once_by_recovery() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let (keys, mut conn) = (client.keys().clone(), client.connection());
    let id = Workflow::new()
        .then(Part::call(3))
        .then(JoinParts::call())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let (uuid, home) = split_id(&id).unwrap();
    let (wf, push, pushing) = (
        keys.workflow(home, uuid),
        keys.workflow_push(home, uuid),
        keys.workflows_pushing(home),
    );
    let job = fetch_one(&client, "wx").await;
    let jid = PayloadDocument::parse(&job.raw).unwrap().jid().to_owned();
    // The report reached the workflow (`wf_report.lua`) and the process died before it pushed
    // the child it released.
    let reported: Vec<String> = scripts::WF_REPORT
        .key(&wf)
        .key(&push)
        .key(&pushing)
        .arg(&id)
        .arg(&jid)
        .arg("done")
        .arg("3")
        .arg(RETENTION.as_millis() as u64)
        .invoke_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        reported.len(),
        2,
        "it returns the child it released: {reported:?}"
    );
    assert_eq!(
        redis.cli(&["HLEN", &push]),
        "1",
        "the child waits to be pushed"
    );
    assert_eq!(queued(&redis, "wz"), "0");
    // Another process pushed it too, and died before it took it out of the push hash.
    let (child, payload) = {
        let all = redis.cli(&["HGETALL", &push]);
        let mut lines = all.lines();
        (
            lines.next().unwrap().to_owned(),
            lines.next().unwrap().to_owned(),
        )
    };
    let pushed: i64 = scripts::CHAIN_PUSH
        .key(keys.handed("wz", &child))
        .key(keys.queue("wz"))
        .arg(&payload)
        .arg(3_600_000)
        .invoke_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(pushed, 1);

    // Recovery on the home queue finishes the push, which the guard makes a no-op.
    Recovery::new(client.connection(), client.keys(), None)
        .drain_pushing(home)
        .await
        .unwrap();
    assert_eq!(queued(&redis, "wz"), "1", "pushed once");
    assert_eq!(redis.cli(&["HLEN", &push]), "0");
    assert_eq!(redis.cli(&["SCARD", &pushing]), "0");
    // A worker runs it: its parent's result was kept with the report.
    let worker = TestWorker::start(&redis.url(), Some("wz"), 2);
    let status = client
        .wait_for(&child, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(matches!(status, JobStatus::Done { .. }), "{status:?}");
    assert_eq!(client.result::<u64>(&child).await.unwrap(), Some(3));
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_stored_by_a_dispatcher_that_died_is_started_by_recovery() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let (keys, mut conn) = (client.keys().clone(), client.connection());
    // What `wf_create.lua` leaves when its dispatcher dies before pushing the first step.
    let id = "0193a000-0000-7000-8000-000000000001@wx";
    let (uuid, home) = split_id(id).unwrap();
    let mut payload = gator_core::Payload::new("part", "wx", serde_json::json!([4]));
    payload.workflow = Some(Box::new(gator_core::payload::WorkflowLink {
        id: id.to_owned(),
        parents: Vec::new(),
    }));
    let created: Vec<String> = scripts::WF_CREATE
        .key(keys.workflow(home, uuid))
        .key(keys.workflow_push(home, uuid))
        .key(keys.workflows_pushing(home))
        .arg(id)
        .arg(1)
        .arg(&payload.jid)
        .arg(r#"{"job":"part","queue":"wx"}"#)
        .arg("")
        .arg(0)
        .arg(payload.to_json())
        .invoke_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        created,
        [payload.jid.clone(), payload.to_json()],
        "the step to push"
    );
    assert_eq!(queued(&redis, "wx"), "0");

    let worker = TestWorker::start(&redis.url(), Some("wx"), 2);
    wait_until("the first step to run", Duration::from_secs(10), || async {
        matches!(
            client.status_in("wx", &payload.jid).await.unwrap(),
            JobStatus::Done { .. }
        )
    })
    .await;
    // The step's report reaches its workflow through the outbox, just after its own record.
    wait_until("the workflow done", Duration::from_secs(10), || async {
        let workflow = client.workflow_status(id).await.unwrap().unwrap();
        workflow.state == gator_core::workflow::WorkflowState::Done
    })
    .await;
    worker.stop().await;
}
