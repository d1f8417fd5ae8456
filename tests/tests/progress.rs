//! A running job's progress (`ctx.progress`): coalesced to a few writes a second whatever the
//! job calls, readable by `Client::progress`, `job_details` and `gator-worker job show` while
//! it runs and after, on Redis's clock; bad input refused. On one server, or on a cluster
//! with `GATOR_TEST_REDIS=cluster` (every key of a job carries its queue's hash tag).

use gator_core::context::{JobInfo, StateMap};
use gator_core::{Context, Error, JobStatus, job};
use gator_tests::{RedisServer, client, run_cli, wait_until};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// The test worker binary's job (same wire name and arguments).
#[job(queue = "progress")]
async fn report_progress(_reports: u32) {}

/// The test worker binary's job that returns right after its last report.
#[job(queue = "progress")]
async fn report_and_return(_reports: u32) {}

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

/// `redis-cli MONITOR` on `port`, counting the commands that write `key`, in a thread.
fn count_writes(port: u16, key: String) -> (std::process::Child, std::sync::mpsc::Receiver<usize>) {
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "monitor"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli monitor");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut writes = 0;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains("\"SET\"") && line.contains(&key) {
                writes += 1;
                let _ = tx.send(writes);
            }
        }
    });
    (child, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_reports_in_a_second_are_written_a_few_times_and_kept() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jid = ReportProgress::call(1000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let key = format!("gator:{{progress}}:progress:{jid}");
    // The master of the job's slot (on a cluster), where its progress is written.
    let port = redis.port_of(&key);
    let (mut monitor, writes) = count_writes(port, key);
    let _worker = gator_tests::spawn_worker_process(WORKER, &redis.url(), "progress", 1);

    // During the run: the last report is readable while the job is still running.
    wait_until(
        "the last report written",
        Duration::from_secs(20),
        || async {
            let p = client.progress(&jid).await.unwrap();
            p.is_some_and(|p| p.fraction == 1.0)
        },
    )
    .await;
    assert!(matches!(
        client.status(&jid).await.unwrap(),
        JobStatus::Running { .. }
    ));
    let p = client.progress(&jid).await.unwrap().unwrap();
    assert_eq!((p.note.as_str(), p.attempt), ("1000 of 1000", 1));
    let redis_now = client.redis_time().await.unwrap();
    let at =
        p.at.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
    assert!(
        at <= redis_now && redis_now - at < 20_000,
        "stamped on Redis's clock"
    );

    // After: done, and the last progress kept beside the finished record.
    redis.cli(&["SET", "progress:release", "1"]);
    let done = client
        .wait_for(&jid, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(matches!(done, JobStatus::Done { .. }));
    let details = client.job_details(&jid).await.unwrap().unwrap();
    assert_eq!(details.progress.as_ref().map(|p| p.fraction), Some(1.0));
    let shown = run_cli(WORKER, &redis.url(), &["job", "show", &jid]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("progress  1") && shown.contains("1000 of 1000"),
        "{shown}"
    );

    let _ = monitor.kill();
    let _ = monitor.wait();
    let count = writes.try_iter().last().unwrap_or(0);
    eprintln!("1,000 reports written {count} times");
    // About a second of reports: the first at once, then at most 4 a second, then the last.
    assert!(
        (2..=8).contains(&count),
        "1,000 reports were written {count} times"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_report_is_written_before_the_job_is_done() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _worker = gator_tests::spawn_worker_process(WORKER, &redis.url(), "progress", 2);
    for round in 0..5 {
        let jid = ReportAndReturn::call(500)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
        let done = client
            .wait_for(&jid, Duration::from_secs(10))
            .await
            .unwrap();
        assert!(matches!(done, JobStatus::Done { .. }));
        let p = client.progress(&jid).await.unwrap();
        let p = p.unwrap_or_else(|| panic!("round {round}: no progress once done"));
        assert_eq!(
            (p.fraction, p.note.as_str()),
            (1.0, "500 of 500"),
            "round {round}"
        );
    }
}

#[tokio::test]
async fn bad_progress_is_refused_and_a_long_note_is_cut() {
    let info = JobInfo {
        jid: "j1".into(),
        job_name: "report_progress".into(),
        queue: "progress".into(),
        attempt: 1,
        created_at_ms: 0,
        enqueued_at_ms: 0,
        chain_id: None,
    };
    let ctx = Context::new(info, StateMap::default(), CancellationToken::new());
    for bad in [f64::NAN, -0.1, 1.5, f64::INFINITY] {
        let refused = ctx.progress(bad, "").await;
        assert!(
            matches!(refused, Err(Error::InvalidProgress { .. })),
            "{bad} was not refused"
        );
    }
    assert_eq!(ctx.last_progress(), None, "nothing recorded");
    ctx.progress(0.5, "x".repeat(5_000)).await.unwrap();
    let (fraction, note) = ctx.last_progress().unwrap();
    assert_eq!(fraction, 0.5);
    assert!(
        note.len() < 1_100 && note.contains("more bytes cut"),
        "{}",
        note.len()
    );
    ctx.progress_sync(1.0, "sync").unwrap();
    assert_eq!(ctx.last_progress().unwrap().1, "sync");
}
