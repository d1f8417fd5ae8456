//! Inspecting and handling durable jobs as an operator: `gator-worker job show` of a suspended
//! or running durable job shows what it saved (checkpoint, steps with results in order, sleeps,
//! slices) and, suspended, when it wakes and why; a sleeping job can be cancelled and run now
//! like any scheduled job. In-process workers on a private Redis.

use gator_core::context::durable::{Iteration, Next};
use gator_core::{Admin, Cancellation, Client, Context, JobError, JobStatus, SetKind, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use gator_worker::cli::AdminCommand;
use gator_worker::cli::job::JobAction;
use gator_worker::{QueueSelection, WorkerConfig};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Runs of each tag, in order.
static RUNS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Lets `holds_after_checkpoint` end.
static RELEASE: AtomicBool = AtomicBool::new(false);

fn runs(tag: &str) -> usize {
    RUNS.lock().unwrap().iter().filter(|t| *t == tag).count()
}

/// Saves a checkpoint of `cp_bytes` bytes of text, two steps, then sleeps a minute.
#[job(queue = "inspect_sleep")]
async fn saves_then_sleeps(ctx: Context, tag: String, cp_bytes: usize) -> Result<(), JobError> {
    RUNS.lock().unwrap().push(tag.clone());
    ctx.checkpoint(&"c".repeat(cp_bytes)).await?;
    ctx.step("charge", || async { Ok::<_, JobError>("ch_1".to_owned()) })
        .await?;
    ctx.step("receipt", || async {
        Ok::<_, JobError>(serde_json::json!({"sent": true}))
    })
    .await?;
    ctx.sleep(Duration::from_secs(60)).await?;
    Ok(())
}

/// Checkpoints, then runs until released.
#[job(queue = "inspect_run")]
async fn holds_after_checkpoint(ctx: Context) -> Result<(), JobError> {
    ctx.checkpoint(&serde_json::json!({"row": 42})).await?;
    while !RELEASE.load(Ordering::Acquire) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Sleeps twice, briefly.
#[job(queue = "inspect_metrics")]
async fn naps_twice(ctx: Context) -> Result<(), JobError> {
    ctx.sleep(Duration::from_millis(50)).await?;
    ctx.sleep(Duration::from_millis(50)).await?;
    Ok(())
}

/// Walks 12 items of 20 ms in slices of 60 ms.
#[job(queue = "inspect_metrics")]
async fn walks_in_slices(ctx: Context) -> Result<(), JobError> {
    let plan = Iteration::default()
        .checkpoint_every_items(1)
        .max_slice(Duration::from_millis(60));
    ctx.iterate_with(plan, 0u32, |item| async move {
        if item >= 12 {
            return Ok::<_, JobError>(Next::Done);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(Next::Continue(item + 1))
    })
    .await
}

fn worker(redis: &RedisServer, queue: &str) -> TestWorker {
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec![queue.into()]);
    config.concurrency = 2;
    config.poll_interval = Duration::from_millis(200);
    config.shutdown_timeout = Duration::from_secs(2);
    TestWorker::start_with(config)
}

async fn suspended(client: &Client, jid: &str) {
    wait_until("the job to suspend", Duration::from_secs(10), || async {
        matches!(
            client.status(jid).await.unwrap(),
            JobStatus::Suspended { .. }
        )
    })
    .await;
}

/// `job show JID` (`--json` or lines) as printed.
async fn show(client: &Client, jid: &str, json: bool) -> String {
    let mut out = Vec::new();
    AdminCommand::Job {
        action: JobAction::Show {
            jid: jid.to_owned(),
            json,
        },
    }
    .run(&Admin::new(client.clone()), &mut out)
    .await
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_show_of_a_sleeping_job_shows_its_wake_time_reason_checkpoint_and_steps_in_order() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = SavesThenSleeps::call("show".into(), 3)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "inspect_sleep");
    suspended(&client, &jid).await;
    worker.stop().await;

    let shown: serde_json::Value = serde_json::from_str(&show(&client, &jid, true).await).unwrap();
    assert_eq!(shown["status"], "suspended", "{shown}");
    assert_eq!(shown["reason"], "sleep 1");
    assert!(
        shown["wakes"].as_str().is_some_and(|w| w.ends_with('Z')),
        "{shown}"
    );
    let durable = &shown["durable"];
    assert_eq!(durable["checkpoint"], "ccc", "{shown}");
    assert_eq!(durable["steps"][0]["name"], "charge");
    assert_eq!(durable["steps"][0]["value"], "ch_1");
    assert_eq!(durable["steps"][1]["name"], "receipt");
    assert_eq!(durable["steps"][1]["value"]["sent"], true);
    assert_eq!(durable["sleeps"], 1);
    assert_eq!(durable["slices"], 0);

    let lines = show(&client, &jid, false).await;
    for line in [
        "status    suspended",
        "reason    sleep 1",
        "checkpoint \"ccc\"",
        "step      charge: \"ch_1\"",
        "step      receipt: {\"sent\":true}",
        "sleeps    1",
    ] {
        assert!(lines.contains(line), "{line:?} missing from:\n{lines}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_show_cuts_a_large_checkpoint_in_lines_and_gives_it_whole_in_json() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = SavesThenSleeps::call("large".into(), 60_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "inspect_sleep");
    suspended(&client, &jid).await;
    worker.stop().await;

    let lines = show(&client, &jid, false).await;
    assert!(lines.len() < 4000, "{} bytes printed", lines.len());
    assert!(lines.contains("more bytes cut]"), "{lines}");
    let shown: serde_json::Value = serde_json::from_str(&show(&client, &jid, true).await).unwrap();
    assert_eq!(
        shown["durable"]["checkpoint"].as_str().unwrap().len(),
        60_000
    );
    assert_eq!(shown["durable"]["checkpoint_bytes"], 60_002);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_show_of_a_running_job_shows_the_checkpoint_it_saved_in_flight() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    RELEASE.store(false, Ordering::Release);
    let jid = HoldsAfterCheckpoint::call()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "inspect_run");
    wait_until("the job to be running", Duration::from_secs(10), || async {
        matches!(
            client.status(&jid).await.unwrap(),
            JobStatus::Running { .. }
        )
    })
    .await;
    wait_until(
        "its checkpoint to show",
        Duration::from_secs(10),
        || async {
            let shown: serde_json::Value =
                serde_json::from_str(&show(&client, &jid, true).await).unwrap();
            shown["durable"]["checkpoint"]["row"] == 42
        },
    )
    .await;
    let shown: serde_json::Value = serde_json::from_str(&show(&client, &jid, true).await).unwrap();
    assert_eq!(shown["status"], "running", "{shown}");
    RELEASE.store(true, Ordering::Release);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_job_is_cancelled_and_never_runs_again() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = SavesThenSleeps::call("cancel".into(), 1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "inspect_sleep");
    suspended(&client, &jid).await;

    let cancelled = client.cancel(&jid).await.unwrap();
    assert_eq!(cancelled, Cancellation::Removed);
    assert!(matches!(
        client.status(&jid).await.unwrap(),
        JobStatus::Cancelled { .. }
    ));
    let scheduled = Admin::new(client.clone())
        .find_job(SetKind::Scheduled, Some("inspect_sleep"), &jid)
        .await
        .unwrap();
    assert!(scheduled.is_none(), "still parked: {scheduled:?}");
    worker.stop().await;
    assert_eq!(runs("cancel"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_now_wakes_a_sleeping_job_before_its_time() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = SavesThenSleeps::call("wake".into(), 1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "inspect_sleep");
    suspended(&client, &jid).await;
    let admin = Admin::new(client.clone());
    let moved = admin
        .run_now(SetKind::Scheduled, Some("inspect_sleep"), &jid)
        .await
        .unwrap();
    assert!(moved, "run now found no sleeping job");
    // Woken a minute early, it runs again: its sleep is slept, so it finishes.
    wait_until(
        "the woken job to finish",
        Duration::from_secs(10),
        || async { matches!(client.status(&jid).await.unwrap(), JobStatus::Done { .. }) },
    )
    .await;
    worker.stop().await;
    assert_eq!(runs("wake"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_each_suspension_by_queue_job_and_kind_and_say_what_it_is() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let port = gator_tests::free_port();
    let bind: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    gator_worker::prometheus::serve(bind).unwrap();
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec!["inspect_metrics".into()]);
    config.poll_interval = Duration::from_millis(200);
    config.metrics = true;
    let worker = TestWorker::start_with(config);
    let napper = NapsTwice::call().through(&client).dispatch().await.unwrap();
    let walker = WalksInSlices::call()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    for jid in [&napper, &walker] {
        wait_until("the job to finish", Duration::from_secs(15), || async {
            matches!(client.status(jid).await.unwrap(), JobStatus::Done { .. })
        })
        .await;
    }
    worker.stop().await;

    let body = gator_tests::metrics::scrape(port).unwrap();
    let line = |job: &str, kind: &str| {
        body.lines()
            .find(|l| {
                l.starts_with("gator_jobs_suspended_total{")
                    && l.contains("queue=\"inspect_metrics\"")
                    && l.contains(&format!("job=\"{job}\""))
                    && l.contains(&format!("kind=\"{kind}\""))
            })
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
    };
    assert_eq!(line("naps_twice", "sleep"), Some(2), "{body}");
    assert!(
        line("walks_in_slices", "slice").is_some_and(|n| n >= 1),
        "{body}"
    );
    assert!(
        body.contains("# HELP gator_jobs_suspended_total Runs of durable jobs that ended parked"),
        "{body}"
    );
    let processed = "gator_jobs_processed_total{queue=\"inspect_metrics\",job=\"naps_twice\"} 1";
    assert!(body.contains(processed), "a sleep is no attempt: {body}");
}
