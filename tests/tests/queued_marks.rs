//! Queued marks: a job dispatched on the plain path is recorded as queued by a field in a
//! hash shared with up to 15 other jobs, not by a key of its own (see "Job status" in
//! `docs/wire-format.md`). Every way a job leaves its queue takes its mark out: a success, a
//! failure, a clear, a cancel. And every reader still answers `queued`.

use gator_core::{Admin, Cancellation, Client, JobStatus, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::time::Duration;

#[job(queue = "qm")]
async fn noted(_n: u64) {}

#[job(queue = "qm-fail", retries = 2, backoff = ["1h"])]
async fn refused(_n: u64) -> Result<(), String> {
    Err("not today".into())
}

fn keys(redis: &RedisServer, pattern: &str) -> Vec<String> {
    let out = redis.cli(&["--scan", "--pattern", pattern]);
    out.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

async fn statuses(client: &Client, jids: &[String]) -> Vec<JobStatus> {
    let mut out = Vec::new();
    for jid in jids {
        out.push(client.status(jid).await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_jobs_cost_no_key_each_and_their_marks_go_when_they_run() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jids = client
        .dispatch_many((0..300).map(Noted::call))
        .await
        .unwrap();

    assert!(
        statuses(&client, &jids)
            .await
            .iter()
            .all(|s| *s == JobStatus::Queued),
        "every job reads queued"
    );
    assert!(
        keys(&redis, "gator:{qm}:job:*").is_empty(),
        "no key per queued job"
    );
    let marks = keys(&redis, "gator:{qm}:queued:*");
    assert!(
        (19..=20).contains(&marks.len()),
        "300 jobs in buckets of 16: {} buckets",
        marks.len()
    );
    for mark in &marks {
        assert_eq!(
            redis.cli(&["OBJECT", "ENCODING", mark]),
            "listpack",
            "{mark}"
        );
    }

    let worker = TestWorker::start(&redis.url(), Some("qm"), 4);
    wait_until("every job done", Duration::from_secs(20), || async {
        redis.cli(&["LLEN", "gator:{qm}:queue"]) == "0"
            && statuses(&client, &jids)
                .await
                .iter()
                .all(|s| matches!(s, JobStatus::Done { .. }))
    })
    .await;
    worker.stop().await;
    assert!(
        keys(&redis, "gator:{qm}:queued:*").is_empty(),
        "no mark left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_a_clear_and_a_cancel_each_take_the_mark_out() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let admin = Admin::new(client.clone());

    // A failure: the retry record replaces the mark.
    let failed = Refused::call(1).dispatch_with(&client).await.unwrap();
    let worker = TestWorker::start(&redis.url(), Some("qm-fail"), 1);
    wait_until("the retry", Duration::from_secs(10), || async {
        matches!(
            client.status(&failed).await.unwrap(),
            JobStatus::Retrying { .. }
        )
    })
    .await;
    worker.stop().await;
    assert!(keys(&redis, "gator:{qm-fail}:queued:*").is_empty());

    // A cancel of a queued job: cancelled, and its mark gone; its bucket mates stay queued.
    let jids = client.dispatch_many((0..3).map(Noted::call)).await.unwrap();
    assert_eq!(
        client.cancel(&jids[0]).await.unwrap(),
        Cancellation::Removed
    );
    let after = statuses(&client, &jids).await;
    assert!(matches!(after[0], JobStatus::Cancelled { .. }), "{after:?}");
    assert_eq!(after[1..], [JobStatus::Queued, JobStatus::Queued]);
    let fields: usize = keys(&redis, "gator:{qm}:queued:*")
        .iter()
        .map(|k| redis.cli(&["HLEN", k]).parse::<usize>().unwrap())
        .sum();
    assert_eq!(fields, 2, "the cancelled job's mark is out");

    // A clear: the others are unknown from then on, and no mark is left.
    assert_eq!(admin.clear_queue("qm").await.unwrap(), 2);
    let cleared = statuses(&client, &jids[1..]).await;
    assert!(
        cleared.iter().all(|s| *s == JobStatus::Unknown),
        "{cleared:?}"
    );
    assert!(keys(&redis, "gator:{qm}:queued:*").is_empty());
}

/// Finished records are bounded by count, not only by time: with `finished_max_jobs` 50 and a
/// day's retention, 300 successes leave the newest 50 records, and nothing else per job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_records_are_kept_to_a_count_per_queue() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jids = client
        .dispatch_many((0..300).map(Noted::call))
        .await
        .unwrap();
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    config.queues = "qm".parse().unwrap();
    config.concurrency = 4;
    config.retention = Duration::from_secs(24 * 3600);
    config.finished_max_jobs = 50;
    let worker = TestWorker::start_with(config);
    wait_until(
        "the oldest records trimmed",
        Duration::from_secs(20),
        || async {
            redis.cli(&["LLEN", "gator:{qm}:queue"]) == "0"
                && keys(&redis, "gator:{qm}:job:*").len() == 50
        },
    )
    .await;
    worker.stop().await;
    assert_eq!(redis.cli(&["LLEN", "gator:{qm}:finished"]), "50");
    let kept: Vec<String> = keys(&redis, "gator:{qm}:job:*")
        .into_iter()
        .map(|k| k.rsplit(':').next().unwrap().to_owned())
        .collect();
    let after = statuses(&client, &jids).await;
    let done = after
        .iter()
        .filter(|s| matches!(s, JobStatus::Done { .. }))
        .count();
    assert_eq!(done, 50, "the newest 50 read done, the others unknown");
    for jid in &kept {
        assert!(jids.contains(jid));
    }
}
