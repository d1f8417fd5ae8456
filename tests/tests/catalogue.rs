//! The job catalogue: workers publish what they run, and every producer by name (the Rust
//! `dispatch_by_name`, which the HTTP API, the dashboard and the CLI call) gets the job its
//! Rust code declares: its queue, its limiter, its uniqueness; a misspelt name or arguments
//! that do not fit are refused; and a worker hands back the jobs of a shared queue it does
//! not run, with no attempt used, for the worker that runs them.

use gator_core::catalogue::Overlap;
use gator_core::{Admin, Client, Context, JobStatus, job};
use gator_tests::{RedisServer, wait_until};
use gator_worker::{CancellationToken, Worker};
use serde_json::json;
use std::sync::Mutex;
use std::time::Duration;
use tokio::task::JoinHandle;

#[job(queue = "mail", limit_key = region, rate = "email", priority = 20, unique_for = "1m")]
async fn send_mail(region: String, to: String, count: u32) {
    let _ = (region, to, count);
}

#[job(queue = "reports", no_overlap, retries = 3, timeout = "30s", backoff = ["1s", "30s"])]
async fn build_report(account: u64) {
    let _ = account;
}

/// (job, argument, attempt) of every run of the two jobs on the shared queue.
static RUNS: Mutex<Vec<(&str, u64, u32)>> = Mutex::new(Vec::new());

#[job(queue = "shared")]
async fn left_job(n: u64, ctx: Context) {
    RUNS.lock().unwrap().push(("left_job", n, ctx.attempt()));
}

#[job(queue = "shared")]
async fn right_job(n: u64, ctx: Context) {
    RUNS.lock().unwrap().push(("right_job", n, ctx.attempt()));
}

/// A worker of `jobs` serving `queues`, running until the token is cancelled.
fn worker(
    client: &Client,
    queues: &str,
    jobs: &[&str],
) -> (CancellationToken, JoinHandle<gator_core::Result<()>>) {
    let worker = Worker::builder()
        .client(client.clone())
        .queues(queues)
        .concurrency(4)
        .poll_interval(Duration::from_millis(100))
        .jobs(jobs.iter().copied())
        .build()
        .expect("a valid worker");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    (stop, running)
}

async fn published(client: &Client, name: &str) {
    wait_until(
        "the job in the catalogue",
        Duration::from_secs(10),
        || async { client.catalogue_entry(name).await.unwrap().is_some() },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_publishes_each_job_with_its_queue_arguments_options_and_itself() {
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    let (stop, running) = worker(&client, "idle", &["send_mail", "build_report"]);
    published(&client, "build_report").await;

    let all = client.catalogue().await.unwrap();
    let names: Vec<&str> = all.iter().map(|k| k.definition.job.as_str()).collect();
    assert_eq!(names, ["build_report", "send_mail"]);
    let mail = &all[1];
    let def = &mail.definition;
    assert_eq!(def.queue, "mail");
    let params: Vec<(&str, &str)> = def
        .params
        .iter()
        .flatten()
        .map(|p| (p.name.as_str(), p.ty.as_str()))
        .collect();
    assert_eq!(
        params,
        [("region", "String"), ("to", "String"), ("count", "u32")]
    );
    assert_eq!((def.flow.priority, def.limit_key_arg), (Some(20), Some(0)));
    assert_eq!(def.flow.rate.as_deref(), Some("email"));
    assert_eq!(def.unique.as_ref().map(|u| u.for_ms), Some(60_000));
    assert_eq!(mail.runners.len(), 1);
    assert_eq!(mail.runners[0].queues, ["idle"]);
    let report = &all[0].definition;
    assert_eq!((report.retries, report.timeout_ms), (3, Some(30_000)));
    assert_eq!(report.no_overlap, Overlap::Args);
    assert_eq!(
        (report.backoff.as_str(), &report.backoff_ms[..]),
        ("list", &[1000, 30_000][..])
    );
    assert_eq!(def.backoff, "default");

    // A worker that stops gives its leases up at once: no live worker runs the job, and it
    // stays known (recent) for producers.
    stop.cancel();
    running.await.unwrap().unwrap();
    let mail = client.catalogue_entry("send_mail").await.unwrap().unwrap();
    assert!(mail.runners.is_empty() && !mail.writer_live, "{mail:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_by_name_gets_the_queue_limiter_and_uniqueness_its_rust_code_declares() {
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    let (stop, running) = worker(&client, "idle", &["send_mail"]);
    published(&client, "send_mail").await;

    let args = json!(["eu", "ada@example.com", 2]);
    let first = client
        .dispatch_by_name("send_mail", args.clone())
        .dispatch()
        .await
        .unwrap();
    assert!(!first.is_duplicate());
    let second = client
        .dispatch_by_name("send_mail", args)
        .dispatch()
        .await
        .unwrap();
    assert!(second.is_duplicate(), "unique_for applies by name too");
    assert_eq!(second.jid(), first.jid());

    let flow = Admin::new(client.clone())
        .flow_status("mail")
        .await
        .unwrap();
    let parked: Vec<(&str, Option<&str>, u64)> = flow
        .parked
        .iter()
        .map(|p| (p.key.as_str(), p.rate.as_deref(), p.jobs))
        .collect();
    assert_eq!(
        parked,
        [("eu", Some("email"), 1)],
        "parked under its limit key and limiter"
    );
    stop.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_name_or_arguments_that_do_not_fit_are_refused_and_nothing_is_stored() {
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    let (stop, running) = worker(&client, "idle", &["send_mail", "build_report"]);
    published(&client, "build_report").await;

    let refused = client
        .dispatch_by_name("send_mial", json!(["eu", "a", 1]))
        .dispatch()
        .await
        .expect_err("a misspelt name is refused");
    let message = refused.to_string();
    assert!(
        message.contains("\"send_mial\"") && message.contains("build_report, send_mail"),
        "{message}"
    );
    let short = client
        .dispatch_by_name("send_mail", json!(["eu"]))
        .dispatch()
        .await
        .expect_err("too few arguments");
    assert!(
        short
            .to_string()
            .contains("takes 3 arguments (region: String, to: String, count: u32), got 1"),
        "{short}"
    );
    let wrong = client
        .dispatch_by_name("build_report", json!(["forty-two"]))
        .dispatch()
        .await
        .expect_err("a string for a u64");
    assert!(wrong.to_string().contains("`account: u64`"), "{wrong}");
    let admin = Admin::new(client.clone());
    assert_eq!(admin.flow_status("mail").await.unwrap().parked_jobs(), 0);

    // Forced, an unknown name is stored on the queue given (one no worker serves, so it
    // stays there to be seen).
    let forced = client
        .dispatch_by_name("send_mial", json!([]))
        .queue("unserved")
        .force()
        .dispatch()
        .await
        .unwrap();
    assert_eq!(
        client.status(forced.jid()).await.unwrap(),
        JobStatus::Queued
    );
    stop.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_hands_back_the_jobs_it_does_not_run_without_using_an_attempt() {
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    // Two workers share a queue, each running one of its two jobs (the README's embedded
    // worker beside a worker binary).
    let (stop_left, left) = worker(&client, "shared", &["left_job"]);
    let (stop_right, right) = worker(&client, "shared", &["right_job"]);
    published(&client, "left_job").await;
    published(&client, "right_job").await;
    let mut jids = Vec::new();
    for n in 0..20u64 {
        jids.push(LeftJob::call(n).through(&client).dispatch().await.unwrap());
        jids.push(RightJob::call(n).through(&client).dispatch().await.unwrap());
    }
    wait_until("every job to run", Duration::from_secs(30), || async {
        RUNS.lock().unwrap().len() >= 40
    })
    .await;
    let runs = RUNS.lock().unwrap().clone();
    assert_eq!(runs.len(), 40, "each ran once: {runs:?}");
    assert!(
        runs.iter().all(|(_, _, attempt)| *attempt == 1),
        "a job handed back used no attempt: {runs:?}"
    );
    for jid in &jids {
        let status = client.status(jid).await.unwrap();
        assert!(
            matches!(status, JobStatus::Done { attempts: 1, .. }),
            "{status:?}"
        );
    }
    stop_left.cancel();
    stop_right.cancel();
    left.await.unwrap().unwrap();
    right.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_lists_the_catalogue_and_enqueues_by_name_through_it() {
    const CLI: &str = env!("CARGO_BIN_EXE_gator-test-worker");
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    let (stop, running) = worker(&client, "idle", &["send_mail", "build_report"]);
    published(&client, "send_mail").await;
    let url = redis.url();

    let listed = gator_tests::run_cli(CLI, &url, &["jobs"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("JOB") && header.contains("WORKERS"),
        "{text}"
    );
    let mail = text
        .lines()
        .find(|l| l.starts_with("send_mail"))
        .unwrap_or_default();
    assert!(
        mail.contains("mail") && mail.contains("count: u32") && mail.contains("rate=email"),
        "{text}"
    );
    let json = gator_tests::run_cli(CLI, &url, &["jobs", "--json"]);
    let jobs: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(jobs.as_array().map(Vec::len), Some(2), "{jobs}");

    let sent = gator_tests::run_cli(CLI, &url, &["enqueue", "build_report", "[7]"]);
    assert!(sent.status.success(), "{sent:?}");
    assert!(String::from_utf8_lossy(&sent.stdout).starts_with("build_report: enqueued "));
    let refused = gator_tests::run_cli(CLI, &url, &["enqueue", "build_reprot", "[7]"]);
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("build_report, send_mail"), "{why}");
    let status = Admin::new(client.clone())
        .flow_status("reports")
        .await
        .unwrap();
    assert_eq!(
        status.parked_jobs(),
        1,
        "the one enqueued, parked by its no_overlap key"
    );
    stop.cancel();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_worker_at_a_time_writes_a_definition_and_the_catalogue_stays_bounded() {
    let redis = RedisServer::start();
    let client = gator_tests::client(&redis.url()).await;
    let mut presence = gator_core::store::Presence::new(client.connection(), client.keys());
    let queues = vec!["q".to_owned()];
    let old = vec![(
        "job_a".to_owned(),
        r#"{"job":"job_a","queue":"q","retries":1}"#.to_owned(),
    )];
    let new = vec![(
        "job_a".to_owned(),
        r#"{"job":"job_a","queue":"q","retries":2}"#.to_owned(),
    )];

    // The old version holds the writer lease: the new one is told, and does not overwrite it.
    let first = presence
        .publish_catalogue(("old-worker", 60_000), &queues, 10, &old)
        .await
        .unwrap();
    assert!(first.differs.is_empty());
    let second = presence
        .publish_catalogue(("new-worker", 60_000), &queues, 10, &new)
        .await
        .unwrap();
    assert_eq!(
        second.differs,
        [("job_a".to_owned(), "old-worker".to_owned())]
    );
    let known = client.catalogue_entry("job_a").await.unwrap().unwrap();
    assert_eq!(known.definition.retries, 1);
    assert_eq!(known.runners.len(), 2, "both run it");

    // Once the old one stops, the new one writes at its next renewal.
    presence
        .withdraw_catalogue("old-worker", &["job_a".to_owned()])
        .await
        .unwrap();
    let third = presence
        .publish_catalogue(("new-worker", 60_000), &queues, 10, &new)
        .await
        .unwrap();
    assert!(third.differs.is_empty());
    let known = client.catalogue_entry("job_a").await.unwrap().unwrap();
    assert_eq!(
        (known.definition.retries, known.writer.as_str()),
        (2, "new-worker")
    );
    assert_eq!(known.runners.len(), 1);

    // A lease that ended (a worker that died) frees the name too, on Redis's clock.
    let short = vec![(
        "job_b".to_owned(),
        r#"{"job":"job_b","queue":"q","retries":1}"#.to_owned(),
    )];
    presence
        .publish_catalogue(("dying", 200), &queues, 10, &short)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let known = client.catalogue_entry("job_b").await.unwrap().unwrap();
    assert!(known.runners.is_empty() && !known.writer_live, "{known:?}");

    // Bounded: past the most names, a new one is refused and said so.
    let many: Vec<(String, String)> = (0..3)
        .map(|i| {
            (
                format!("extra_{i}"),
                format!(r#"{{"job":"extra_{i}","queue":"q","retries":0}}"#),
            )
        })
        .collect();
    let full = presence
        .publish_catalogue(("w", 60_000), &queues, 4, &many)
        .await
        .unwrap();
    assert_eq!(full.full, ["extra_2"]);
    assert_eq!(client.catalogue().await.unwrap().len(), 4);
}

#[test]
fn every_worker_of_one_build_publishes_the_same_definition() {
    use gator_core::JobRegistration;
    use gator_core::catalogue::Definition;
    // The default backoff has a random part: were its delays published, two workers of one
    // build would disagree, and each would say so at every start.
    let definition = || Definition::of(&JobRegistration::of::<SendMail>("here"));
    assert_eq!(definition(), definition());
    assert_eq!(definition().backoff, "default");
}
