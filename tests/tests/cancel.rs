//! Cancellation in every state: queued (on a plain and on a paused, controlled queue),
//! scheduled, retrying, running (its context fires, it is recorded cancelled and never
//! retried), running in a worker that is SIGKILLed before it settles, finished, unknown; a
//! workflow; and the CLI.

use gator_core::workflow::{StepState, WorkflowState};
use gator_core::{Cancellation, Client, Context, JobError, JobStatus, Workflow, job};
use gator_tests::{Notes, RedisServer, TestWorker, client, run_cli, wait_until};
use std::time::{Duration, Instant};

/// Runs of `note` jobs, by tag.
static NOTES: Notes = Notes::new();

fn notes(tag: &str) -> Vec<String> {
    NOTES.tagged(tag)
}

#[job(queue = "cx")]
async fn note(tag: String, n: u32) {
    NOTES.push(format!("{tag} {n}"));
}

/// Fails its first attempt, and retries a minute later.
#[job(queue = "cx", backoff = ["60s"])]
async fn fails_once(tag: String) -> Result<(), String> {
    NOTES.push(format!("{tag} attempt"));
    Err("the first attempt fails".into())
}

/// Works for up to `secs`, stopping when cancelled; notes when it saw the cancellation.
#[job(queue = "cx")]
async fn long_work(ctx: Context, tag: String, secs: u64) -> Result<(), JobError> {
    NOTES.push(format!("{tag} started"));
    tokio::select! {
        () = ctx.cancelled() => {
            NOTES.push(format!("{tag} told to stop"));
            Err(JobError::new("stopped: cancelled"))
        }
        () = tokio::time::sleep(Duration::from_secs(secs)) => {
            NOTES.push(format!("{tag} finished"));
            Ok(())
        }
    }
}

fn worker(redis: &RedisServer) -> TestWorker {
    TestWorker::start(&redis.url(), Some("cx"), 4)
}

async fn status(client: &Client, jid: &str) -> JobStatus {
    client.status(jid).await.unwrap()
}

async fn wait_for_state(client: &Client, jid: &str, state: &str) {
    wait_until(
        &format!("{jid} {state}"),
        Duration::from_secs(15),
        || async { status(client, jid).await.name() == state },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_is_removed_and_never_runs() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut jids = Vec::new();
    for n in 0..3 {
        jids.push(
            Note::call("queued".into(), n)
                .through(&client)
                .dispatch()
                .await
                .unwrap(),
        );
    }
    assert_eq!(
        client.cancel(&jids[1]).await.unwrap(),
        Cancellation::Removed
    );
    assert!(matches!(
        status(&client, &jids[1]).await,
        JobStatus::Cancelled { .. }
    ));
    assert_eq!(redis.cli(&["LLEN", "gator:{cx}:queue"]), "2");

    let worker = worker(&redis);
    wait_until("the other two", Duration::from_secs(10), || async {
        notes("queued").len() == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // (Four processors: the two run in either order.)
    let mut ran = notes("queued");
    ran.sort();
    assert_eq!(ran, ["queued 0", "queued 2"], "the cancelled job never ran");
    assert!(matches!(
        client.cancel(&jids[1]).await.unwrap(),
        Cancellation::Finished(JobStatus::Cancelled { .. })
    ));
    assert!(matches!(
        client.cancel(&jids[0]).await.unwrap(),
        Cancellation::Finished(JobStatus::Done { .. })
    ));
    assert_eq!(
        client.cancel("no-such-jid").await.unwrap(),
        Cancellation::Unknown
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_and_retrying_jobs_are_removed() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let scheduled = Note::call("later".into(), 1)
        .after(Duration::from_secs(60))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let retrying = FailsOnce::call("retry".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis);
    wait_for_state(&client, &retrying, "retrying").await;

    assert_eq!(
        client.cancel(&scheduled).await.unwrap(),
        Cancellation::Removed
    );
    assert_eq!(
        client.cancel(&retrying).await.unwrap(),
        Cancellation::Removed
    );
    for jid in [&scheduled, &retrying] {
        assert!(matches!(
            status(&client, jid).await,
            JobStatus::Cancelled { .. }
        ));
    }
    assert_eq!(redis.cli(&["ZCARD", "gator:{cx}:scheduled"]), "0");
    assert_eq!(redis.cli(&["ZCARD", "gator:{cx}:retry"]), "0");
    assert_eq!(notes("retry"), ["retry attempt"], "one attempt, no retry");
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_is_told_to_stop_and_never_retried() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis);
    let jid = LongWork::call("run".into(), 60)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_for_state(&client, &jid, "running").await;

    let asked = Instant::now();
    assert_eq!(client.cancel(&jid).await.unwrap(), Cancellation::Stopping);
    wait_until("the job to stop", Duration::from_secs(10), || async {
        notes("run").contains(&"run told to stop".to_owned())
    })
    .await;
    eprintln!(
        "the running job saw its cancellation after {:?}",
        asked.elapsed()
    );
    wait_for_state(&client, &jid, "cancelled").await;
    // Its error would be retried; a cancelled job is not.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(redis.cli(&["ZCARD", "gator:{cx}:retry"]), "0");
    assert_eq!(redis.cli(&["SCARD", "gator:{cx}:cancelling"]), "0");
    assert_eq!(notes("run"), ["run started", "run told to stop"]);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_job_on_a_paused_queue_is_cancelled_and_never_runs() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_core::Admin::new(client.clone())
        .pause_queue("cx")
        .await
        .unwrap();
    let cancelled = Note::call("parked".into(), 1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let kept = Note::call("parked".into(), 2)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis);
    assert_eq!(
        client.cancel(&cancelled).await.unwrap(),
        Cancellation::Removed
    );
    assert!(matches!(
        status(&client, &cancelled).await,
        JobStatus::Cancelled { .. }
    ));
    // Its worker learns of it within a poll; then the queue resumes.
    tokio::time::sleep(Duration::from_secs(1)).await;
    gator_core::Admin::new(client.clone())
        .resume_queue("cx")
        .await
        .unwrap();
    wait_for_state(&client, &kept, "done").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(notes("parked"), ["parked 2"]);
    assert!(matches!(
        status(&client, &cancelled).await,
        JobStatus::Cancelled { .. }
    ));
    assert_eq!(
        redis.cli(&["SCARD", "gator:{cx}:cancelling"]),
        "0",
        "settled"
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_workflow_stops_its_running_step_and_cancels_the_rest() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker(&redis);
    let id = Workflow::new()
        .then(LongWork::call("wf".into(), 60))
        .then(Note::call("wf".into(), 2))
        .then(Note::call("wf".into(), 3))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let first = client.workflow_status(&id).await.unwrap().unwrap().steps[0]
        .jid
        .clone();
    wait_for_state(&client, &first, "running").await;
    assert_eq!(client.cancel_workflow(&id).await.unwrap(), 3);
    wait_until(
        "the first step to stop",
        Duration::from_secs(10),
        || async { notes("wf").contains(&"wf told to stop".to_owned()) },
    )
    .await;
    wait_for_state(&client, &first, "cancelled").await;
    let status = client.workflow_status(&id).await.unwrap().unwrap();
    assert_eq!(status.state, WorkflowState::Cancelled);
    assert_eq!(status.steps[1].state, StepState::Cancelled);
    assert_eq!(status.steps[2].state, StepState::Cancelled);
    assert_eq!(notes("wf"), ["wf started", "wf told to stop"]);
    assert_eq!(
        client.cancel_workflow(&id).await.unwrap(),
        0,
        "already ended"
    );
    worker.stop().await;
}

/// The test worker binary's `sleepy`, named here so the test can dispatch it typed.
#[job(name = "sleepy")]
async fn sleepy(_id: u64, _millis: u64) {}

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

/// A job cancelled while its worker is dead (SIGKILLed mid-run) is put back by recovery, and
/// the worker that fetches it next settles it cancelled without running it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_cancelled_in_a_killed_worker_is_settled_by_the_next_one() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = Sleepy::call(7, 20_000)
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
    wait_for_state(&client, &jid, "running").await;
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(client.cancel(&jid).await.unwrap(), Cancellation::Stopping);

    let _second = gator_tests::spawn_worker_process_with(
        WORKER,
        &redis.url(),
        "default",
        1,
        &["--lease", "4s"],
    );
    wait_for_state(&client, &jid, "cancelled").await;
    assert_eq!(
        redis.cli(&["HGET", "test:runs", "7"]),
        "1",
        "it ran once, in the killed worker"
    );
    assert_eq!(redis.cli(&["SCARD", "gator:{default}:cancelling"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_cancel_in_the_cli() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = Note::call("cli".into(), 1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let out = run_cli(WORKER, &redis.url(), &["job", "cancel", &jid]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("it will not run"));
    let again = run_cli(WORKER, &redis.url(), &["job", "cancel", &jid, "--json"]);
    assert!(!again.status.success(), "already cancelled");
    assert!(String::from_utf8_lossy(&again.stderr).contains("already finished: it is cancelled"));
    let show = run_cli(WORKER, &redis.url(), &["job", "show", &jid]);
    assert!(String::from_utf8_lossy(&show.stdout).contains("status    cancelled"));
    let unknown = run_cli(WORKER, &redis.url(), &["job", "cancel", "nope"]);
    assert!(!unknown.status.success());
}

/// A job fetched as it was cancelled, and done before any worker read its mark, leaves the
/// cancelling set at the next read: the set holds only jobs still to stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mark_left_by_a_job_that_finished_first_is_taken_out() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let keys = client.keys();
    let done = Note::call("prune".into(), 1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let parked = Note::call("prune".into(), 2)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    // Both marked, as a cancel marks a job it cannot take out of its queue.
    for jid in [&done, &parked] {
        assert_eq!(redis.cli(&["SADD", "gator:{cx}:cancelling", jid]), "1");
    }
    // The first one's worker finished it before reading the mark.
    redis.cli(&["SET", &keys.job("cx", &done), "done 1 1 "]);
    gator_core::store::Run::new(client.connection(), keys)
        .marked_cancelled(&["cx".to_owned()])
        .await
        .unwrap();
    assert_eq!(
        redis.cli(&["SMEMBERS", "gator:{cx}:cancelling"]),
        parked,
        "the done job's mark is gone; the other is still to settle"
    );
}
