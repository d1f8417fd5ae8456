//! Operating Gator (issue 16): the statistics and history workers keep in Redis, on Redis's
//! clock even when a worker's own clock is hours off; what `gator_core::inspect` and the CLI
//! show of queues and processes; clearing a queue; search with a bounded budget and a cursor;
//! chains and workflows in flight; enqueueing by wire name; and the Prometheus endpoint of
//! `--metrics-bind`; and counts a worker could not write while Redis was away, written once it
//! is back.

use gator_core::Admin;
use gator_core::admin::{HistoryPoint, HistorySpan, Place, SearchField, SearchQuery};
use gator_core::{Chain, Error, JobStatus, Workflow, job};
use gator_tests::{RedisServer, TestWorker, WorkerCommand, client, run_cli, wait_until};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

/// The test worker's jobs, under the same wire names, so they can be dispatched from here.
#[job]
async fn count_run(id: u64) {
    let _ = id;
}

#[job(backoff = ["60s"])]
async fn fail_slowly(id: u64) -> Result<(), String> {
    Err(format!("job {id} fails on purpose"))
}

#[job]
async fn sleepy(id: u64, millis: u64) {
    let _ = (id, millis);
}

/// Run in this process: dies at once with an error that names its customer.
#[job(queue = "billing", retries = 0)]
async fn charge(customer: String, cents: u64) -> Result<(), String> {
    Err(format!("card declined for {customer} ({cents} cents)"))
}

#[job(queue = "steps")]
async fn stage(n: u32) {
    let _ = n;
}

fn stdout(output: &std::process::Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn cli_json(redis: &RedisServer, args: &[&str]) -> Value {
    serde_json::from_str(&stdout(&run_cli(WORKER, &redis.url(), args))).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_count_outcomes_into_the_history_on_redis_time_even_with_a_skewed_clock() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // One worker on the right time, one three hours behind: a worker that bucketed its counts
    // on its own clock would put them three hours back, outside the last hour.
    let command = WorkerCommand::new(WORKER, &redis.url(), "default");
    let _fleet = [command.spawn(), command.clone().clock_offset("-3h").spawn()];
    for id in 0..20 {
        CountRun::call(id)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    for id in 0..5 {
        FailSlowly::call(id)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    // Workers write their counts once a second, not per job.
    wait_until("25 attempts counted", Duration::from_secs(20), || async {
        Admin::new(client.clone())
            .overview()
            .await
            .unwrap()
            .processed
            == 25
    })
    .await;
    let overview = Admin::new(client.clone()).overview().await.unwrap();
    assert_eq!((overview.failed, overview.retries), (5, 5), "{overview:?}");
    assert_eq!(overview.processes, 2);
    // The server's own version: Valkey's `redis_version` says 7.2.4 whatever its version.
    let (server, major) = if gator_tests::server_is_valkey() {
        ("valkey", "9.")
    } else {
        ("redis", "7.")
    };
    assert_eq!(overview.redis.server, server, "{overview:?}");
    assert!(overview.redis.version.starts_with(major), "{overview:?}");

    let hour = Admin::new(client.clone())
        .history(HistorySpan::Hour, None)
        .await
        .unwrap();
    assert_eq!(hour.len(), 60);
    assert_eq!(hour.iter().map(|p| p.processed).sum::<u64>(), 25);
    assert_eq!(hour.iter().map(|p| p.failed).sum::<u64>(), 5);
    // Every count is in the last two minutes of Redis time, none where the skewed clock is.
    let now = client.redis_time().await.unwrap();
    let day = Admin::new(client.clone())
        .history(HistorySpan::Day, None)
        .await
        .unwrap();
    let (recent, old): (Vec<&HistoryPoint>, Vec<&HistoryPoint>) =
        day.iter().partition(|p| p.at_ms + 120_000 > now);
    assert_eq!(recent.iter().map(|p| p.processed).sum::<u64>(), 25);
    assert!(
        old.iter().all(|p| p.processed == 0),
        "counts in the past: {day:?}"
    );
    let week = Admin::new(client.clone())
        .history(HistorySpan::Week, Some("default"))
        .await
        .unwrap();
    assert_eq!(week.len(), 168);
    // The counts are in this hour's bucket, or the last one's when the hour turned since they
    // were written; none three hours back.
    let (before, last_two) = week.split_at(166);
    assert_eq!(
        last_two.iter().map(|p| p.processed).sum::<u64>(),
        25,
        "{week:?}"
    );
    assert!(before.iter().all(|p| p.processed == 0), "{week:?}");

    // The CLI shows the same.
    let stats = cli_json(&redis, &["stats", "--json"]);
    assert_eq!(stats["processed"], 25);
    assert_eq!(stats["last"]["hour"]["failed"], 5);
    let text = stdout(&run_cli(WORKER, &redis.url(), &["stats"]));
    assert!(
        text.contains("processed  25") || text.contains("processed 25"),
        "{text}"
    );
    let queues = cli_json(&redis, &["queues", "--json"]);
    let default = queues
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "default")
        .expect("the default queue is listed");
    assert_eq!(
        (default["processed"].clone(), default["retries"].clone()),
        (json!(25), json!(5))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_show_their_running_jobs_and_how_long_each_has_run() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _worker = WorkerCommand::new(WORKER, &redis.url(), "default")
        .args(&["--concurrency", "3"])
        .spawn();
    let slow = Sleepy::call(1, 8000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    Sleepy::call(2, 8000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until(
        "two jobs running with their starts",
        Duration::from_secs(15),
        || async {
            let processes = Admin::new(client.clone()).processes().await.unwrap();
            processes.len() == 1
                && processes[0].busy == 2
                && processes[0].jobs.iter().all(|j| j.running_for_ms.is_some())
        },
    )
    .await;
    let process = Admin::new(client.clone())
        .processes()
        .await
        .unwrap()
        .remove(0);
    assert_eq!(process.concurrency, 3);
    assert!((process.utilization - 2.0 / 3.0).abs() < 1e-9);
    assert_eq!(process.queues, "default");
    assert!(process.heartbeat_age_ms < 20_000, "{process:?}");
    let job = process
        .jobs
        .iter()
        .find(|j| j.jid == slow)
        .expect("the slow job");
    assert_eq!((job.job.as_str(), job.attempt), ("sleepy", 1));
    assert_eq!(job.args, json!([1, 8000]));
    assert_eq!(
        Admin::new(client.clone())
            .queue_info("default")
            .await
            .unwrap()
            .busy,
        2
    );

    let text = stdout(&run_cli(WORKER, &redis.url(), &["processes"]));
    assert!(text.contains("1 processes, 2 jobs running"), "{text}");
    assert!(text.contains(&slow) && text.contains("sleepy"), "{text}");
    let json = cli_json(&redis, &["processes", "--json"]);
    assert_eq!(json[0]["busy"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_shows_its_latency_and_is_cleared_with_its_records() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut jids = Vec::new();
    for id in 0..3 {
        jids.push(
            CountRun::call(id)
                .queue("idle")
                .through(&client)
                .dispatch()
                .await
                .unwrap(),
        );
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let idle = Admin::new(client.clone()).queue_info("idle").await.unwrap();
    assert_eq!(idle.size, 3);
    assert!(idle.latency_ms.unwrap() >= 1000, "{idle:?}");
    assert!(!idle.paused);

    let out = stdout(&run_cli(WORKER, &redis.url(), &["queue", "clear", "idle"]));
    assert_eq!(out, "idle: cleared 3 waiting jobs\n");
    let idle = Admin::new(client.clone()).queue_info("idle").await.unwrap();
    assert_eq!((idle.size, idle.latency_ms), (0, None));
    for jid in &jids {
        assert_eq!(client.status(jid).await.unwrap(), JobStatus::Unknown);
    }

    // A paused queue is controlled: its jobs are parked, and clearing cancels each one.
    Admin::new(client.clone())
        .pause_queue("held")
        .await
        .unwrap();
    let parked = CountRun::call(9)
        .queue("held")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    CountRun::call(10)
        .queue("held")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let held = Admin::new(client.clone()).queue_info("held").await.unwrap();
    assert!(held.paused && held.controlled, "{held:?}");
    assert_eq!(held.size, 2);
    let text = stdout(&run_cli(WORKER, &redis.url(), &["queues"]));
    let row = text
        .lines()
        .find(|l| l.starts_with("held"))
        .expect("a row for held");
    assert!(row.contains("paused"), "{text}");
    // Parked jobs are searched, and their latency is known, as a listed job's.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(
        Admin::new(client.clone())
            .queue_info("held")
            .await
            .unwrap()
            .latency_ms
            .unwrap()
            >= 1000
    );
    let mut query = SearchQuery::new(&parked);
    query.field = SearchField::Jid;
    let page = Admin::new(client.clone()).search(&query).await.unwrap();
    assert_eq!(page.hits.len(), 1, "{page:?}");
    assert_eq!(
        (page.hits[0].place, page.hits[0].job.as_str()),
        (Place::Queued, "count_run")
    );
    assert_eq!(
        Admin::new(client.clone())
            .clear_queue("held")
            .await
            .unwrap(),
        2
    );
    assert!(matches!(
        client.status(&parked).await.unwrap(),
        JobStatus::Cancelled { .. }
    ));
    assert!(matches!(
        Admin::new(client.clone()).clear_queue("no{brace").await,
        Err(Error::InvalidQueueName { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_jobs_by_args_error_job_and_jid_and_pages_with_a_cursor() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("billing"), 4);
    let customers = ["acme", "globex", "initech"];
    for n in 0..30u64 {
        let customer = customers[n as usize % 3].to_owned();
        Charge::call(customer, n)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    wait_until("30 dead charges", Duration::from_secs(20), || async {
        Admin::new(client.clone())
            .queue_info("billing")
            .await
            .unwrap()
            .dead
            == 30
    })
    .await;
    worker.stop().await;
    // Waiting and scheduled jobs too.
    let later = Charge::call("acme-later".into(), 1)
        .after(Duration::from_secs(3600))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    Charge::call("ACME-now".into(), 2)
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    let mut query = SearchQuery::new("acme");
    query.field = SearchField::Args;
    let page = Admin::new(client.clone()).search(&query).await.unwrap();
    assert_eq!(
        page.hits.len(),
        12,
        "10 dead, 1 scheduled, 1 queued: {page:?}"
    );
    assert_eq!(page.next_cursor, None);
    let places: HashSet<Place> = page.hits.iter().map(|h| h.place).collect();
    assert_eq!(
        places,
        HashSet::from([Place::Queued, Place::Scheduled, Place::Dead])
    );
    let scheduled = page
        .hits
        .iter()
        .find(|h| h.place == Place::Scheduled)
        .unwrap();
    assert_eq!(scheduled.jid.as_deref(), Some(later.as_str()));

    let mut query = SearchQuery::new("declined for globex");
    query.field = SearchField::Error;
    query.places = vec![Place::Dead];
    let page = Admin::new(client.clone()).search(&query).await.unwrap();
    assert_eq!(page.hits.len(), 10);
    assert!(
        page.hits
            .iter()
            .all(|h| h.error.as_deref().unwrap().contains("globex"))
    );

    // A small budget: many calls, each reading at most 7 entries; together they find exactly
    // what one big call finds, each job once.
    let mut query = SearchQuery::new("charge");
    query.field = SearchField::Job;
    query.budget = 7;
    let (mut seen, mut calls) = (Vec::new(), 0);
    loop {
        let page = Admin::new(client.clone()).search(&query).await.unwrap();
        assert!(page.scanned <= 7, "{}", page.scanned);
        calls += 1;
        seen.extend(page.hits.into_iter().filter_map(|h| h.jid));
        match page.next_cursor {
            Some(cursor) => query.cursor = Some(cursor),
            None => break,
        }
    }
    assert_eq!(seen.len(), 32);
    assert_eq!(
        seen.iter().collect::<HashSet<_>>().len(),
        32,
        "no job twice"
    );
    assert!(calls >= 5, "{calls} calls");

    // A jid prefix.
    let mut query = SearchQuery::new(&later[..13]);
    query.field = SearchField::Jid;
    let page = Admin::new(client.clone()).search(&query).await.unwrap();
    assert!(
        page.hits
            .iter()
            .any(|h| h.jid.as_deref() == Some(later.as_str()))
    );
    assert!(matches!(
        Admin::new(client.clone())
            .search(&SearchQuery::new("  "))
            .await,
        Err(Error::InvalidArgs { .. })
    ));
    let mut bad = SearchQuery::new("x");
    bad.cursor = Some("nonsense".into());
    assert!(matches!(
        Admin::new(client.clone()).search(&bad).await,
        Err(Error::InvalidArgs { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chains_and_workflows_are_listed_in_flight_until_they_finish() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let chain = Chain::new()
        .then(Stage::call(1))
        .then(Stage::call(2))
        .then(Stage::call(3))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let workflow = Workflow::new()
        .then(Stage::call(10))
        .then_all([Stage::call(11), Stage::call(12)])
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let flows = gator_core::Admin::new(client.clone())
        .journeys_in_flight(100)
        .await
        .unwrap();
    let listed = flows.iter().find(|f| f.id == chain).expect("the chain");
    assert_eq!((listed.kind, listed.waiting), ("chain", 2));
    let listed = flows
        .iter()
        .find(|f| f.id == workflow)
        .expect("the workflow");
    assert_eq!(listed.kind, "workflow");
    assert_eq!((listed.steps, listed.waiting), (Some(3), 2));

    let worker = TestWorker::start(&redis.url(), Some("steps"), 2);
    wait_until("both to finish", Duration::from_secs(20), || async {
        gator_core::Admin::new(client.clone())
            .journeys_in_flight(100)
            .await
            .unwrap()
            .is_empty()
    })
    .await;
    worker.stop().await;
    // The finished ones left the indexes as they were read.
    let indexed: usize = redis::pipe()
        .zcard(client.keys().chains_index("steps"))
        .zcard(client.keys().workflows_index("steps"))
        .query_async::<(usize, usize)>(&mut client.connection())
        .await
        .map(|(a, b)| a + b)
        .unwrap();
    assert_eq!(indexed, 0);
}

/// Dispatches `job` by wire name on `queue`; its jid.
async fn by_name(
    client: &gator_core::Client,
    queue: &str,
    job: &str,
    args: Value,
) -> gator_core::Result<String> {
    let by_name = client.dispatch_by_name(job, args).queue(queue);
    Ok(by_name.dispatch().await?.into_jid())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_enqueued_by_wire_name_runs_and_bad_input_is_refused() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _worker = WorkerCommand::new(WORKER, &redis.url(), "default").spawn();
    gator_tests::catalogued(&client, "count_run").await;
    let jid = by_name(&client, "default", "count_run", json!([42]))
        .await
        .unwrap();
    let status = client
        .wait_for(&jid, Duration::from_secs(15))
        .await
        .unwrap();
    assert!(matches!(status, JobStatus::Done { .. }), "{status:?}");
    let later = client
        .dispatch_by_name("count_run", json!([43]))
        .queue("default")
        .after(Duration::from_secs(600))
        .unwrap()
        .dispatch()
        .await
        .unwrap()
        .into_jid();
    assert!(matches!(
        client.status(&later).await.unwrap(),
        JobStatus::Scheduled { .. }
    ));
    // A name no worker published is refused; forced (another language's worker may run it),
    // it is stored and ends dead or retrying with the reason, its payload kept.
    assert!(matches!(
        by_name(&client, "default", "no_such_job", json!([])).await,
        Err(Error::NotInCatalogue { .. })
    ));
    let unknown = client
        .dispatch_by_name("no_such_job", json!([]))
        .force()
        .dispatch()
        .await
        .unwrap()
        .into_jid();
    wait_until(
        "the unknown job to fail",
        Duration::from_secs(15),
        || async {
            matches!(
                client.status(&unknown).await.unwrap(),
                JobStatus::Retrying { .. }
            )
        },
    )
    .await;
    assert!(matches!(
        by_name(&client, "default", "", json!([])).await,
        Err(Error::InvalidJobName { .. })
    ));
    assert!(matches!(
        by_name(&client, "default", "count_run", json!({"id": 1})).await,
        Err(Error::InvalidArgs { .. })
    ));
    assert!(matches!(
        by_name(&client, "bad queue", "count_run", json!([])).await,
        Err(Error::InvalidQueueName { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_bind_serves_job_counts_durations_and_queue_gauges_to_prometheus() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let port = gator_tests::free_port();
    let bind = format!("127.0.0.1:{port}");
    let _worker = WorkerCommand::new(WORKER, &redis.url(), "default")
        .args(&["--metrics-bind", &bind])
        .spawn();
    for id in 0..3 {
        CountRun::call(id)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    FailSlowly::call(9)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let processed = r#"gator_jobs_processed_total{queue="default",job="count_run"} 3"#;
    let gauge = r#"gator_queue_depth{queue="default"} "#;
    wait_until(
        "the metrics to show the jobs",
        Duration::from_secs(20),
        || async {
            gator_tests::metrics::scrape(port)
                .is_some_and(|body| body.contains(processed) && body.contains(gauge))
        },
    )
    .await;
    let body = gator_tests::metrics::scrape(port).unwrap();
    for line in [
        r#"gator_jobs_failed_total{queue="default",job="fail_slowly"} 1"#,
        r#"gator_jobs_retried_total{queue="default",job="fail_slowly"} 1"#,
        r#"gator_job_duration_seconds_count{queue="default",job="count_run"} 3"#,
        r#"gator_job_wait_seconds_count{queue="default",job="count_run"} 3"#,
        r#"gator_queue_latency_seconds{queue="default"}"#,
    ] {
        assert!(body.contains(line), "no {line} in:\n{body}");
    }
    assert!(
        body.contains("gator_job_duration_seconds_bucket{"),
        "{body}"
    );

    // A port that is taken: the worker says so and exits, rather than run unobserved.
    let taken = run_cli(
        WORKER,
        &redis.url(),
        &["--queues", "default", "--metrics-bind", &bind],
    );
    assert!(!taken.status.success());
    let stderr = String::from_utf8_lossy(&taken.stderr);
    assert!(stderr.contains("cannot serve metrics"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_a_worker_could_not_write_while_redis_was_away_are_written_once_it_is_back() {
    use gator_worker::clock::RedisClock;
    use gator_worker::observer::Observer;
    use gator_worker::outcome::Outcome;
    let mut redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let clock = RedisClock::default();
    clock.observe(client.redis_time().await.unwrap());
    let observer = Observer::new(false);
    let done = || Outcome::Done {
        handoff: None,
        result: None,
        attempts: 1,
        at_ms: 0,
        unique_lock: false,
        keyed: false,
    };
    for _ in 0..3 {
        observer.finished("default", "count_run", &done(), None);
    }
    // Redis goes away: the flush fails, and the counts wait for the next one.
    redis.stop();
    observer.flush(&client, &clock).await;
    redis.restart();
    observer.finished("default", "count_run", &done(), None);
    wait_until("all 4 counts written", Duration::from_secs(20), || async {
        observer.flush(&client, &clock).await;
        Admin::new(client.clone())
            .queue_info("default")
            .await
            .is_ok_and(|q| q.processed == 4)
    })
    .await;
    let hour = Admin::new(client.clone())
        .history(HistorySpan::Hour, Some("default"))
        .await
        .unwrap();
    assert_eq!(hour.iter().map(|p| p.processed).sum::<u64>(), 4);
}
