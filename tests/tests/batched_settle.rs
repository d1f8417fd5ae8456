//! The plain path's group commit: a busy worker settles many successes per round trip, and
//! each job still runs once, ends `done` with its result, and leaves nothing in flight.

use gator_core::{JobStatus, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

static RUNS: Mutex<Option<HashMap<u64, u32>>> = Mutex::new(None);

fn runs() -> HashMap<u64, u32> {
    RUNS.lock().unwrap().clone().unwrap_or_default()
}

/// A job with no work to speak of, so that many finish at once: returns its id doubled.
#[job(queue = "batched")]
async fn doubled(id: u64) -> Result<u64, String> {
    *RUNS
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .entry(id)
        .or_default() += 1;
    tokio::task::yield_now().await;
    Ok(id * 2)
}

/// A worker of the queues `<prefix>0` to `<prefix><queues - 1>`, weighted alike, running at
/// most `concurrency` jobs.
fn worker_of(redis: &RedisServer, prefix: &str, queues: u64, concurrency: usize) -> TestWorker {
    let mut config = gator_worker::WorkerConfig::new(redis.url());
    let names: Vec<String> = (0..queues).map(|q| format!("{prefix}{q}:1")).collect();
    config.queues = names.join(",").parse().unwrap();
    config.concurrency = concurrency;
    TestWorker::start_with(config)
}

/// How many calls of `command` Redis has answered since the last `CONFIG RESETSTAT`.
fn calls(redis: &RedisServer, command: &str) -> u64 {
    let stats = redis.cli(&["INFO", "commandstats"]);
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_processors_settle_many_jobs_per_round_trip_and_each_runs_once() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let jobs = 6_000u64;
    let jids = client
        .dispatch_many((0..jobs).map(Doubled::call))
        .await
        .unwrap();
    redis.cli(&["CONFIG", "RESETSTAT"]);
    // More processors than one call carries (`MAX_ACKS`), so batches are split too.
    let worker = TestWorker::start(&redis.url(), Some("batched"), 1_000);
    wait_until("every job to run", Duration::from_secs(120), || async {
        runs().len() as u64 == jobs
    })
    .await;
    worker.stop().await;
    let twice = runs().values().filter(|n| **n > 1).count();
    assert_eq!(twice, 0, "jobs ran twice without any process dying");
    assert_eq!(redis.cli(&["LLEN", "gator:{batched}:queue"]), "0");
    assert_eq!(redis.cli(&["KEYS", "gator:*:inflight:*"]), "");
    // One MULTI per success before the group commit; now successes share them.
    let multis = calls(&redis, "exec");
    assert!(
        multis < jobs / 2,
        "{multis} MULTIs settled {jobs} successes: successes are not batched"
    );
    for (id, jid) in jids.iter().enumerate().step_by(97) {
        let status = client.status(jid).await.unwrap();
        assert!(
            matches!(status, JobStatus::Done { attempts: 1, .. }),
            "job {jid} is {status:?}, not done"
        );
        assert_eq!(
            client.result::<u64>(jid).await.unwrap(),
            Some(id as u64 * 2)
        );
    }
}

/// A worker of many queues: its success takes the next job only when its draw names the same
/// queue (1 in 30 here), so nearly every job is fetched on its own. Those fetches are plain
/// `LMOVE`s under a lease that surely holds, not a script each, and every job still runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_of_thirty_queues_fetches_without_a_script_per_job_and_each_runs_once() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let (jobs, queues) = (3_000u64, 30u64);
    let spread = (0..jobs).map(|id| Doubled::call(id).queue(format!("many{}", id % queues)));
    client.dispatch_many(spread).await.unwrap();
    redis.cli(&["CONFIG", "RESETSTAT"]);
    let worker = worker_of(&redis, "many", queues, 10);
    wait_until("every job to run", Duration::from_secs(120), || async {
        runs().len() as u64 == jobs
    })
    .await;
    worker.stop().await;
    let twice = runs().values().filter(|n| **n > 1).count();
    assert_eq!(twice, 0, "jobs ran twice without any process dying");
    assert_eq!(redis.cli(&["KEYS", "gator:*:inflight:*"]), "");
    // Before: a `fetch.lua` call for nearly every job, and an `LMOVE` only for the 1 in 30
    // whose success drew its own queue. The other scripts (leases, promotion, trims) come
    // with time and queues, not jobs.
    let (scripts, moves) = (calls(&redis, "evalsha"), calls(&redis, "lmove"));
    assert!(
        scripts < jobs / 2 && moves >= jobs,
        "{scripts} script calls and {moves} LMOVEs fetched {jobs} jobs of {queues} queues"
    );
}

/// How many reads of client requests Redis has done since the last `CONFIG RESETSTAT`: one
/// per round trip, whatever it carries.
fn reads(redis: &RedisServer) -> u64 {
    let stats = redis.cli(&["INFO", "stats"]);
    stats
        .lines()
        .find_map(|line| line.strip_prefix("total_reads_processed:"))
        .map_or(0, |n| n.trim().parse().unwrap())
}

/// One processor of thirty queues: nearly every success draws another queue than its job's,
/// whose `LMOVE` its `MULTI` cannot carry. The `LMOVE` goes out beside it, so Redis reads the
/// two in one round trip: about one read a job, as for a worker of one queue, not two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_of_thirty_queues_takes_its_next_job_in_its_successs_round_trip() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let (jobs, queues, first) = (900u64, 30u64, 100_000u64);
    let spread =
        (first..first + jobs).map(|id| Doubled::call(id).queue(format!("one{}", id % queues)));
    client.dispatch_many(spread).await.unwrap();
    let worker = worker_of(&redis, "one", queues, 1);
    // Counted from the first job's run: the worker's start (leases, catalogue) is not per job.
    wait_until("the first job to run", Duration::from_secs(30), || async {
        !runs().is_empty()
    })
    .await;
    redis.cli(&["CONFIG", "RESETSTAT"]);
    let started = runs().len() as u64;
    wait_until("every job to run", Duration::from_secs(120), || async {
        runs().len() as u64 == jobs
    })
    .await;
    let per_job = reads(&redis) as f64 / (jobs - started) as f64;
    worker.stop().await;
    assert_eq!(
        runs().values().filter(|n| **n > 1).count(),
        0,
        "jobs ran twice"
    );
    assert_eq!(redis.cli(&["KEYS", "gator:*:inflight:*"]), "");
    // Before: the success's `MULTI`, then the `LMOVE`, two reads a job (2.36 with the reads
    // of empty queues near the end). Beside it, 1.3 to 1.5 here: Redis reads the two at once
    // unless the connection's writer sends the first before the second is queued.
    assert!(
        per_job < 1.9,
        "{per_job:.2} reads a job for one processor of {queues} queues"
    );
}
