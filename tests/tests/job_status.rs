//! Job status and results: every state a job passes through is visible by its jid
//! (`Client::status`), a job's return value comes back typed (`Client::result`,
//! `Client::wait_for`), finished records expire after the retention, and `gator-worker job show`
//! prints them.

use gator_core::{Client, JobStatus, SetKind, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_worker::config::{QueueSelection, WorkerConfig};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Receipt {
    order: u64,
    lines: Vec<String>,
}

/// Returns a receipt: its result is stored with its status.
#[job(queue = "st-done")]
async fn make_receipt(order: u64) -> Result<Receipt, String> {
    Ok(Receipt {
        order,
        lines: vec![format!("order {order}"), "paid".into()],
    })
}

/// Runs until `RELEASE` is set, so a test can see it running.
static RELEASE: AtomicBool = AtomicBool::new(false);
#[job(queue = "st-run")]
async fn hold_on(_n: u64) {
    while !RELEASE.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Fails every time: retried an hour later.
#[job(queue = "st-retry", retries = 3, backoff = ["1h"])]
async fn flaky(_n: u64) -> Result<(), String> {
    Err("upstream said 503".into())
}

/// Fails once for good.
#[job(queue = "st-dead", retries = 0)]
async fn doomed(_n: u64) -> Result<(), String> {
    Err("card declined".into())
}

/// A job on a queue under flow control (a priority makes it controlled): its success is
/// settled by `admit.lua`, and its result kept all the same.
#[job(queue = "st-flow", priority = 5)]
async fn prioritized(n: u64) -> Result<u64, String> {
    Ok(n * 2)
}

fn worker(redis: &RedisServer, queues: &str, retention: Duration) -> TestWorker {
    let mut config = WorkerConfig::new(redis.url());
    config.queues = queues.parse::<QueueSelection>().unwrap();
    config.concurrency = 2;
    config.poll_interval = Duration::from_millis(100);
    config.retention = retention;
    TestWorker::start_with(config)
}

async fn wait_for_state(client: &Client, jid: &str, state: &str) -> JobStatus {
    wait_until(
        &format!("job {jid} {state}"),
        Duration::from_secs(10),
        || async { client.status(jid).await.unwrap().name() == state },
    )
    .await;
    client.status(jid).await.unwrap()
}

fn near(at: SystemTime, expected: SystemTime, slack: Duration) -> bool {
    let diff = match at.duration_since(expected) {
        Ok(d) => d,
        Err(e) => e.duration(),
    };
    diff <= slack
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_state_is_visible_through_status() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;

    // Unknown: never dispatched.
    assert_eq!(
        client.status("no-such-jid").await.unwrap(),
        JobStatus::Unknown
    );

    // Queued and scheduled: no worker serves these queues yet.
    let queued = HoldOn::call(1).through(&client).dispatch().await.unwrap();
    assert_eq!(client.status(&queued).await.unwrap(), JobStatus::Queued);
    assert_eq!(
        client.status_in("st-run", &queued).await.unwrap(),
        JobStatus::Queued
    );
    let later = MakeReceipt::call(9)
        .after(Duration::from_secs(3600))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    match client.status(&later).await.unwrap() {
        JobStatus::Scheduled { at } => assert!(
            near(
                at,
                SystemTime::now() + Duration::from_secs(3600),
                Duration::from_secs(60)
            ),
            "due in an hour, not at {at:?}"
        ),
        other => panic!("expected scheduled, got {other:?}"),
    }

    // Running, then done.
    let w = worker(&redis, "st-run,st-retry,st-dead", Duration::from_secs(3600));
    match wait_for_state(&client, &queued, "running").await {
        JobStatus::Running {
            process, attempt, ..
        } => {
            assert!(!process.is_empty(), "names the process running it");
            assert_eq!(attempt, 1);
        }
        other => panic!("expected running, got {other:?}"),
    }
    RELEASE.store(true, Ordering::SeqCst);
    match client
        .wait_for(&queued, Duration::from_secs(10))
        .await
        .unwrap()
    {
        JobStatus::Done { attempts, .. } => assert_eq!(attempts, 1),
        other => panic!("expected done, got {other:?}"),
    }
    assert_eq!(
        client.result::<()>(&queued).await.unwrap(),
        None,
        "it returned ()"
    );

    // Retrying, with the attempt and the error.
    let retrying = Flaky::call(2).through(&client).dispatch().await.unwrap();
    match wait_for_state(&client, &retrying, "retrying").await {
        JobStatus::Retrying {
            attempt,
            next_at,
            error,
        } => {
            assert_eq!(attempt, 1);
            assert_eq!(error, "upstream said 503");
            assert!(
                near(
                    next_at,
                    SystemTime::now() + Duration::from_secs(3600),
                    Duration::from_secs(120)
                ),
                "runs again in about an hour"
            );
        }
        other => panic!("expected retrying, got {other:?}"),
    }

    // Dead, with the error.
    let dead = Doomed::call(3).through(&client).dispatch().await.unwrap();
    match client
        .wait_for(&dead, Duration::from_secs(10))
        .await
        .unwrap()
    {
        JobStatus::Dead {
            attempts, error, ..
        } => {
            assert_eq!(attempts, 1);
            assert_eq!(error, "card declined");
        }
        other => panic!("expected dead, got {other:?}"),
    }

    // Deleted from the retry set by an admin: unknown from then on.
    assert!(
        gator_core::Admin::new(client.clone())
            .delete_job(SetKind::Retry, Some("st-retry"), &retrying)
            .await
            .unwrap()
    );
    assert_eq!(client.status(&retrying).await.unwrap(), JobStatus::Unknown);

    // Retried from the dead set: queued again.
    w.stop().await;
    assert!(
        gator_core::Admin::new(client.clone())
            .run_now(SetKind::Dead, Some("st-dead"), &dead)
            .await
            .unwrap()
    );
    assert_eq!(client.status(&dead).await.unwrap(), JobStatus::Queued);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_round_trip_typed_on_plain_and_controlled_queues() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let w = worker(&redis, "st-done,st-flow", Duration::from_secs(3600));

    let jids: Vec<String> = client
        .dispatch_many((0..20).map(MakeReceipt::call).collect::<Vec<_>>())
        .await
        .unwrap();
    for (order, jid) in jids.iter().enumerate() {
        assert!(
            client
                .wait_for(jid, Duration::from_secs(10))
                .await
                .unwrap()
                .is_final()
        );
        assert_eq!(
            client.result::<Receipt>(jid).await.unwrap(),
            Some(Receipt {
                order: order as u64,
                lines: vec![format!("order {order}"), "paid".into()],
            })
        );
    }
    // The wrong type is an error, not a silent None.
    assert!(client.result::<Vec<u64>>(&jids[0]).await.is_err());

    let controlled = Prioritized::call(21)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert!(matches!(
        client
            .wait_for(&controlled, Duration::from_secs(10))
            .await
            .unwrap(),
        JobStatus::Done { attempts: 1, .. }
    ));
    assert_eq!(client.result::<u64>(&controlled).await.unwrap(), Some(42));
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_a_job_nobody_runs_times_out_with_its_state() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = MakeReceipt::call(1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    match client.wait_for(&jid, Duration::from_millis(300)).await {
        Err(gator_core::Error::WaitTimedOut { state, .. }) => assert_eq!(state, "queued"),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

/// A finished job's record, and its result, go after the retention; a running one's never.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_records_expire_after_the_retention() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let w = worker(&redis, "st-done", Duration::from_secs(1));
    let jid = MakeReceipt::call(5)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert!(
        client
            .wait_for(&jid, Duration::from_secs(10))
            .await
            .unwrap()
            .is_final()
    );
    assert!(client.result::<Receipt>(&jid).await.unwrap().is_some());
    wait_until("the record expired", Duration::from_secs(5), || async {
        client.status(&jid).await.unwrap() == JobStatus::Unknown
    })
    .await;
    assert_eq!(client.result::<Receipt>(&jid).await.unwrap(), None);
    w.stop().await;
}

/// `gator-worker job show` prints what a person checks: the status, attempts and result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_show_prints_status_attempts_and_result() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let w = worker(&redis, "st-done", Duration::from_secs(3600));
    let jid = MakeReceipt::call(77)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert!(
        client
            .wait_for(&jid, Duration::from_secs(10))
            .await
            .unwrap()
            .is_final()
    );
    w.stop().await;

    let mut out = Vec::new();
    gator_worker::cli::AdminCommand::Job {
        action: gator_worker::cli::job::JobAction::Show {
            jid: jid.clone(),
            json: true,
        },
    }
    .run(&gator_core::Admin::new(client.clone()), &mut out)
    .await
    .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(shown["status"], "done");
    assert_eq!(shown["attempts"], 1);
    assert_eq!(shown["queue"], "st-done");
    assert_eq!(shown["result"]["order"], 77);

    // An unknown jid is shown as such, and is an error (`gator-worker` exits 1 on one), as
    // the HTTP API answers 404.
    let mut out = Vec::new();
    let shown = gator_worker::cli::AdminCommand::Job {
        action: gator_worker::cli::job::JobAction::Show {
            jid: "never-dispatched".into(),
            json: false,
        },
    }
    .run(&gator_core::Admin::new(client.clone()), &mut out)
    .await;
    assert!(
        matches!(&shown, Err(gator_worker::cli::AdminError::UnknownJob { jid }) if jid == "never-dispatched"),
        "{shown:?}"
    );
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains("status    unknown")
    );
}

/// The test worker binary's `sleepy`, named here so the test can dispatch it typed.
#[job(name = "sleepy")]
async fn sleepy(_id: u64, _millis: u64) {}

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

/// A SIGKILLed worker's running job keeps its `running` record until recovery puts it back
/// (`queued`, in the same script) once the dead process's lease has expired; another worker
/// then runs it to done, as its first attempt (a crash is not a failure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_running_job_is_queued_again_then_done_elsewhere() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = Sleepy::call(1, 3000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let mut first = gator_tests::spawn_worker_process_with(
        WORKER,
        &redis.url(),
        "default",
        1,
        &["--lease", "4s"],
    );
    let killed = match wait_for_state(&client, &jid, "running").await {
        JobStatus::Running { process, .. } => process,
        other => panic!("expected running, got {other:?}"),
    };
    first.kill().unwrap();
    first.wait().unwrap();
    // Until its lease expires, the dead process is not known to be dead: its record says so.
    assert!(matches!(
        client.status(&jid).await.unwrap(),
        JobStatus::Running { process, .. } if process == killed
    ));
    // Nothing runs it until a live worker's recovery puts it back.
    let _second = gator_tests::spawn_worker_process_with(
        WORKER,
        &redis.url(),
        "default",
        1,
        &["--lease", "4s"],
    );
    wait_until(
        "the job done elsewhere",
        Duration::from_secs(20),
        || async { client.status(&jid).await.unwrap().is_final() },
    )
    .await;
    match client.status(&jid).await.unwrap() {
        JobStatus::Done { attempts, .. } => assert_eq!(attempts, 1, "a crash is not a failure"),
        other => panic!("expected done, got {other:?}"),
    }
}
