//! Queued marks: a job dispatched on the plain path is recorded as queued by a field in a
//! hash shared with up to 15 other jobs, not by a key of its own (see "Job status" in
//! `docs/wire-format.md`), and its success's `done` record takes the mark's place. A failure,
//! a clear and a cancel take the mark out. Every reader still answers `queued` and `done`, and
//! finished records are bounded by count and by age.

use gator_core::{Admin, Cancellation, Client, JobStatus, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::time::Duration;

#[job(queue = "qm")]
async fn noted(_n: u64) {}

#[job(queue = "qm-fail", retries = 2, backoff = ["1h"])]
async fn refused(_n: u64) -> Result<(), String> {
    Err("not today".into())
}

/// The keys that match `pattern`, sorted (`SCAN`'s order is the hash table's, which differs
/// between servers and changes as the table grows).
fn keys(redis: &RedisServer, pattern: &str) -> Vec<String> {
    let out = redis.cli(&["--scan", "--pattern", pattern]);
    let mut keys: Vec<String> = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    keys.sort();
    keys
}

async fn statuses(client: &Client, jids: &[String]) -> Vec<JobStatus> {
    let mut out = Vec::new();
    for jid in jids {
        out.push(client.status(jid).await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_jobs_cost_no_key_each_and_their_successes_take_their_marks_place() {
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
        keys(&redis, "gator:{qm}:job:*").is_empty(),
        "no key per finished job either"
    );
    let buckets = keys(&redis, "gator:{qm}:queued:*");
    assert_eq!(buckets, marks, "the same buckets hold the done records");
    let mut records = Vec::new();
    for bucket in &buckets {
        let values = redis.cli(&["HVALS", bucket]);
        records.extend(values.lines().map(str::to_owned));
    }
    assert_eq!(records.len(), 300);
    assert!(
        records.iter().all(|r| r.starts_with("done ")),
        "no queued mark is left: {:?}",
        records.iter().find(|r| !r.starts_with("done "))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_a_clear_and_a_cancel_each_take_the_mark_out() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let admin = Admin::new(client.clone());

    // A failure: the retry record replaces the mark.
    let failed = Refused::call(1).through(&client).dispatch().await.unwrap();
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
        || async { redis.cli(&["LLEN", "gator:{qm}:queue"]) == "0" && bucket_fields(&redis) == 50 },
    )
    .await;
    worker.stop().await;
    assert_eq!(redis.cli(&["LLEN", "gator:{qm}:finished"]), "50");
    assert!(keys(&redis, "gator:{qm}:job:*").is_empty());
    let after = statuses(&client, &jids).await;
    let done: Vec<usize> = (0..after.len())
        .filter(|&i| matches!(after[i], JobStatus::Done { .. }))
        .collect();
    assert_eq!(
        done.len(),
        50,
        "the newest 50 read done, the others unknown"
    );
    assert!(
        after
            .iter()
            .all(|s| matches!(s, JobStatus::Done { .. } | JobStatus::Unknown)),
        "{after:?}"
    );
}

/// How many fields the queue's buckets hold (marks and done records).
fn bucket_fields(redis: &RedisServer) -> usize {
    keys(redis, "gator:{qm}:queued:*")
        .iter()
        .map(|k| redis.cli(&["HLEN", k]).parse::<usize>().unwrap())
        .sum()
}

/// A `done` record in a bucket has no expiry of its own: the pruner ends it once it is older
/// than the retention, whatever the count, and the buckets go with their last field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_records_in_buckets_end_after_the_retention() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jids = client
        .dispatch_many((0..40).map(Noted::call))
        .await
        .unwrap();
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    config.queues = "qm".parse().unwrap();
    config.retention = Duration::from_secs(2);
    let worker = TestWorker::start_with(config);
    let wait = Duration::from_secs(10);
    wait_until("every job done", wait, || async {
        statuses(&client, &jids)
            .await
            .iter()
            .all(|s| matches!(s, JobStatus::Done { .. }))
    })
    .await;
    assert_eq!(
        bucket_fields(&redis),
        40,
        "kept while younger than the retention"
    );
    wait_until("the records past the retention gone", wait, || async {
        keys(&redis, "gator:{qm}:queued:*").is_empty()
    })
    .await;
    worker.stop().await;
    let after = statuses(&client, &jids).await;
    assert!(after.iter().all(|s| *s == JobStatus::Unknown), "{after:?}");
    assert_eq!(redis.cli(&["LLEN", "gator:{qm}:finished"]), "0");
}

/// The trim reads and deletes in bulk, and still deletes only what says finished: of 2,500
/// `done` records trimmed to 100 (three calls of the script), a jid whose copy runs again
/// (its `running` key) and one queued again (its mark back in the bucket) keep their records;
/// then, past the retention, the rest go too, and only those two remain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trim_deletes_in_bulk_only_the_records_that_still_say_finished() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jids = client
        .dispatch_many((0..2_500).map(Noted::call))
        .await
        .unwrap();
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    config.queues = "qm".parse().unwrap();
    config.concurrency = 4;
    config.retention = Duration::from_secs(24 * 3600);
    config.finished_max_jobs = 100_000;
    let worker = TestWorker::start_with(config);
    wait_until("every job done", Duration::from_secs(30), || async {
        redis.cli(&["LLEN", "gator:{qm}:finished"]) == "2500"
    })
    .await;
    worker.stop().await;
    // Two of the oldest: one running again (a recovered copy), one queued again.
    let (again, requeued) = (&jids[0], &jids[1]);
    let running = format!("running {} 2 another-process", 1_700_000_000_000u64);
    redis.cli(&["SET", &format!("gator:{{qm}}:job:{again}"), &running]);
    let (bucket, field) = gator_core::wire::jid::mark_of(requeued).unwrap();
    redis.cli(&["HSET", &format!("gator:{{qm}}:queued:{bucket}"), field, ""]);

    let day = Duration::from_secs(24 * 3600);
    let mut upkeep = gator_core::store::Upkeep::new(client.connection(), client.keys());
    assert_eq!(upkeep.trim_finished("qm", 100, day).await.unwrap(), 2_400);
    assert_eq!(redis.cli(&["LLEN", "gator:{qm}:finished"]), "100");
    let after = statuses(&client, &jids).await;
    assert!(
        matches!(after[0], JobStatus::Running { .. }),
        "{:?}",
        after[0]
    );
    assert_eq!(after[1], JobStatus::Queued);
    let done = after.iter().filter(|s| matches!(s, JobStatus::Done { .. }));
    assert_eq!(done.count(), 100, "the newest 100 read done");
    let unknown = after.iter().filter(|s| **s == JobStatus::Unknown);
    assert_eq!(unknown.count(), 2_398, "the other records deleted");
    // The first job's `done` stays under its running record, and the second's mark.
    assert_eq!(bucket_fields(&redis), 102);

    assert_eq!(
        upkeep
            .trim_finished("qm", 10_000, Duration::ZERO)
            .await
            .unwrap(),
        100
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{qm}:finished"]), "0");
    assert_eq!(
        bucket_fields(&redis),
        2,
        "the done record under the running one, the mark"
    );
    let after = statuses(&client, &jids[..2]).await;
    assert!(
        matches!(after[0], JobStatus::Running { .. }),
        "{:?}",
        after[0]
    );
    assert_eq!(after[1], JobStatus::Queued);
}

/// A job scheduled for later is recorded by its bucket's field, and queued again by a script
/// (promoted when due, recovered, put back) by its mark, as a plain dispatch records it: no
/// key each while it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_promoted_when_due_are_recorded_queued_by_their_marks() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut jids = Vec::new();
    for n in 0..40 {
        let soon = Noted::call(n).after(Duration::from_millis(50));
        jids.push(soon.through(&client).dispatch().await.unwrap());
    }
    assert!(
        keys(&redis, "gator:{qm}:job:*").is_empty(),
        "scheduled: no key each, their records are in their buckets"
    );
    let waiting = statuses(&client, &jids).await;
    assert!(
        waiting
            .iter()
            .all(|s| matches!(s, JobStatus::Scheduled { .. })),
        "{waiting:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut upkeep = gator_core::store::Upkeep::new(client.connection(), client.keys());
    upkeep.promote_due("qm").await.unwrap();
    assert_eq!(redis.cli(&["LLEN", "gator:{qm}:queue"]), "40");
    assert!(
        keys(&redis, "gator:{qm}:job:*").is_empty(),
        "queued again by their marks, their scheduled records gone"
    );
    assert!(
        statuses(&client, &jids)
            .await
            .iter()
            .all(|s| *s == JobStatus::Queued),
        "every job reads queued"
    );
}

/// A job with a deadline is recorded running as it is judged in time at its start (a key):
/// its success deletes that record, where a plain success deletes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_deletes_the_running_record_its_deadline_wrote() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jobs = (0..20).map(|n| Noted::call(n).expires_in(Duration::from_secs(3600)));
    let jids = client.dispatch_many(jobs).await.unwrap();
    let worker = TestWorker::start(&redis.url(), Some("qm"), 4);
    wait_until("every job done", Duration::from_secs(10), || async {
        statuses(&client, &jids)
            .await
            .iter()
            .all(|s| matches!(s, JobStatus::Done { .. }))
    })
    .await;
    worker.stop().await;
    assert!(keys(&redis, "gator:{qm}:job:*").is_empty());
}

/// A worker of the release before kept a `queued` record in a key; a success of this one
/// leaves it beside the `done` record in the bucket. The job reads done, and the trim takes
/// both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_key_left_by_an_earlier_release_reads_done_and_is_trimmed() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let jids = client.dispatch_many((0..3).map(Noted::call)).await.unwrap();
    let worker = TestWorker::start(&redis.url(), Some("qm"), 4);
    wait_until("every job done", Duration::from_secs(10), || async {
        redis.cli(&["LLEN", "gator:{qm}:finished"]) == "3"
    })
    .await;
    worker.stop().await;
    redis.cli(&["SET", &format!("gator:{{qm}}:job:{}", jids[0]), "queued"]);
    let first = client.status(&jids[0]).await.unwrap();
    assert!(matches!(first, JobStatus::Done { .. }), "{first:?}");
    let mut upkeep = gator_core::store::Upkeep::new(client.connection(), client.keys());
    assert_eq!(
        upkeep
            .trim_finished("qm", 0, Duration::from_secs(60))
            .await
            .unwrap(),
        3
    );
    assert!(
        keys(&redis, "gator:{qm}:job:*").is_empty(),
        "the stale key gone"
    );
    assert_eq!(bucket_fields(&redis), 0);
}
