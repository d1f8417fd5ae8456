//! Periodic jobs (`gator_core::cron`): three worker processes over many ticks enqueue each tick
//! exactly once; workers stopped for several ticks fire the missed ones once, not in a burst; a
//! new entry fires no tick from before it was added; pause, resume, run-now and the CLI; a job
//! declared with `#[job(cron = ..)]` is published and fired by a worker; a tick on a paused
//! queue is parked; an entry moves between queues; bad input is refused.
//!
//! The clock is Redis's: ticks are computed on `TIME` and compared inside `cron_fire.lua`, so
//! the tests use 6-field, per-second expressions, read Redis's clock to decide what they wait
//! for, and run workers whose own clocks are 5 minutes off (libfaketime) beside a true one.
//! (A sped-up clock does not fit: leases expire on Redis's clock and are renewed on the
//! worker's timers, so a fast Redis clock would expire every lease.) The jobs are the test worker's `cron_tick`, which counts each run under its
//! tick in `test:cron:<tag>`: a tick enqueued twice shows a count of 2.

use gator_core::admin::Fire;
use gator_core::flow::FlowSetting;
use gator_core::store::Upkeep;
use gator_core::{Client, JobStatus, job};
use gator_tests::{
    RedisServer, TestWorker, WorkerCommand, WorkerProcess, client, run_cli, wait_until,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

/// The test worker's periodic-job probe, under the same wire name and queue, so entries can
/// be added here; the worker processes run it.
#[job(queue = "cron")]
async fn cron_tick(tag: String) {
    let _ = tag;
}

/// Runs of `every_second`, the job declared in code here.
static DECLARED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Declared in code: every worker of this binary publishes it; the in-process one runs it.
#[job(cron = "* * * * * *", tz = "Europe/Berlin", queue = "cron-declared")]
async fn every_second() {
    DECLARED_RUNS.fetch_add(1, Ordering::SeqCst);
}

fn workers(redis: &RedisServer, n: usize) -> Vec<WorkerProcess> {
    (0..n)
        .map(|_| gator_tests::spawn_worker_process(WORKER, &redis.url(), "cron", 2))
        .collect()
}

/// Runs per tick (ms) recorded by `cron_tick` jobs tagged `tag`.
async fn runs(client: &Client, tag: &str) -> BTreeMap<u64, u32> {
    redis::cmd("HGETALL")
        .arg(format!("test:cron:{tag}"))
        .query_async(&mut client.connection())
        .await
        .expect("HGETALL")
}

/// Waits until Redis's clock has passed `ms`.
async fn wait_for_redis_time(client: &Client, ms: u64) {
    wait_until(
        "Redis's clock to pass a time",
        Duration::from_secs(30),
        || async { client.redis_time().await.expect("TIME") > ms },
    )
    .await;
}

fn assert_each_tick_ran_once(ticks: &BTreeMap<u64, u32>) {
    let doubled: Vec<_> = ticks.iter().filter(|(_, n)| **n != 1).collect();
    assert!(
        doubled.is_empty(),
        "ticks enqueued more than once (tick → runs): {doubled:?}"
    );
}

/// Adds entry `name`, which enqueues `cron_tick(tag)` every second.
async fn add_every_second(client: &gator_core::Client, name: &str, tag: &str) {
    gator_core::Admin::new(client.clone())
        .add_periodic(name, "* * * * * *", None, CronTick::call(tag.into()))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_with_skewed_clocks_enqueue_each_tick_exactly_once_on_redis_time() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let added = client.redis_time().await.unwrap();
    add_every_second(&client, "every-second", "fleet").await;
    // One worker on the right time, one 5 minutes ahead, one 5 minutes behind (libfaketime):
    // a worker that took a tick from its own clock would fire ticks from the future, or old
    // ones again.
    let command = WorkerCommand::new(WORKER, &redis.url(), "cron").args(&["--concurrency", "2"]);
    let _fleet = [
        command.spawn(),
        command.clone().clock_offset("+5m").spawn(),
        command.clone().clock_offset("-5m").spawn(),
    ];

    wait_until("15 ticks to run", Duration::from_secs(60), || async {
        runs(&client, "fleet").await.len() >= 15
    })
    .await;
    // Let the jobs of the last ticks settle, then look at every tick.
    let seen = client.redis_time().await.unwrap();
    wait_for_redis_time(&client, seen + 1500).await;
    let ticks = runs(&client, "fleet").await;
    assert_each_tick_ran_once(&ticks);
    let now = client.redis_time().await.unwrap();
    for tick in ticks.keys() {
        assert_eq!(tick % 1000, 0, "a tick falls on a whole second: {tick}");
        assert!(
            *tick > added && *tick <= now,
            "tick {tick} is not between the entry's creation ({added}) and now ({now}) on Redis's clock"
        );
    }
    // Three workers wake at every second, so ticks are not skipped either (a tick is skipped
    // only if no worker got to it before the next one: allow a few, on a loaded machine).
    let (first, last) = (ticks.keys().next().unwrap(), ticks.keys().last().unwrap());
    let expected = (last - first) / 1000 + 1;
    assert!(
        ticks.len() as u64 * 4 >= expected * 3,
        "{} ticks ran between {first} and {last}, of {expected}",
        ticks.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_fires_of_one_tick_push_one_job() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_core::Admin::new(client.clone())
        .add_periodic("race", "* * * * * *", None, CronTick::call("race".into()))
        .await
        .unwrap();
    let entry = gator_core::Admin::new(client.clone())
        .periodic_entries()
        .await
        .unwrap()
        .remove(0)
        .entry;
    let now = client.redis_time().await.unwrap();
    wait_for_redis_time(&client, now + 1000).await;
    let now = client.redis_time().await.unwrap();
    let tick = entry.schedule().unwrap().latest_at_or_before(now).unwrap();
    let fires = (0..20).map(|_| {
        let client = client.clone();
        let payload = entry.payload(Some(tick), now);
        async move {
            Upkeep::new(client.connection(), client.keys())
                .fire_cron("race", Some(tick), &payload)
                .await
                .unwrap()
        }
    });
    let outcomes = futures_join_all(fires).await;
    let pushed = outcomes.iter().filter(|o| **o == Fire::Pushed).count();
    assert_eq!(pushed, 1, "outcomes: {outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Fire::Pushed | Fire::AlreadyFired))
    );
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("cron")
            .await
            .unwrap(),
        1
    );
    // An older tick, and one after Redis's clock, push nothing.
    let older = entry.payload(Some(tick - 1000), now);
    let fire = |tick, payload| {
        let client = client.clone();
        async move {
            Upkeep::new(client.connection(), client.keys())
                .fire_cron("race", Some(tick), &payload)
                .await
                .unwrap()
        }
    };
    assert_eq!(fire(tick - 1000, older.clone()).await, Fire::AlreadyFired);
    assert_eq!(fire(now + 60_000, older).await, Fire::Early);
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("cron")
            .await
            .unwrap(),
        1
    );
}

/// `join_all` without the futures crate: each future on its own task.
async fn futures_join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.expect("a fire task panicked"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_stopped_for_several_ticks_fire_the_missed_ones_once_not_in_a_burst() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    add_every_second(&client, "downtime", "down").await;
    let fleet = workers(&redis, 2);
    wait_until("3 ticks to run", Duration::from_secs(30), || async {
        runs(&client, "down").await.len() >= 3
    })
    .await;
    // SIGKILL both (dropping a WorkerProcess kills it): nobody fires until they are back.
    drop(fleet);
    let stopped = client.redis_time().await.unwrap();
    let before: BTreeMap<u64, u32> = runs(&client, "down").await;
    let last_before = *before.keys().last().unwrap();
    wait_for_redis_time(&client, stopped + 5000).await;
    let restarted = client.redis_time().await.unwrap();
    let _fleet = workers(&redis, 2);
    wait_until(
        "a tick after the restart to run",
        Duration::from_secs(30),
        || async { runs(&client, "down").await.keys().any(|t| *t > restarted) },
    )
    .await;
    let ticks = runs(&client, "down").await;
    assert_each_tick_ran_once(&ticks);
    // About 5 ticks went by with no worker; at most the latest one fired late, once.
    let missed: Vec<_> = ticks
        .keys()
        .filter(|t| **t > last_before + 1000 && **t <= restarted)
        .collect();
    assert!(
        missed.len() <= 1,
        "the ticks missed while the workers were down fired in a burst: {missed:?} (stopped at {stopped}, restarted at {restarted})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_entry_fires_no_tick_from_before_it_was_added() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let before = client.redis_time().await.unwrap();
    // Once a year: its latest tick is months before now, and must not fire (nor can a new
    // tick come during the test).
    gator_core::Admin::new(client.clone())
        .add_periodic("yearly", "0 0 1 1 *", None, CronTick::call("new".into()))
        .await
        .unwrap();
    let listed = gator_core::Admin::new(client.clone())
        .periodic_entries()
        .await
        .unwrap();
    let last = listed[0]
        .last_fired
        .expect("a new entry records when it was added");
    assert!(last >= before, "{last} < {before}");
    let entry = listed[0].entry.clone();
    let now = client.redis_time().await.unwrap();
    let earlier = entry.schedule().unwrap().latest_at_or_before(now).unwrap();
    let outcome = Upkeep::new(client.connection(), client.keys())
        .fire_cron("yearly", Some(earlier), &entry.payload(Some(earlier), now))
        .await
        .unwrap();
    assert_eq!(outcome, Fire::AlreadyFired);
    // A worker's passes fire nothing either.
    let worker = TestWorker::start(&redis.url(), Some("nothing"), 1);
    let after = client.redis_time().await.unwrap();
    wait_for_redis_time(&client, after + 1500).await;
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("cron")
            .await
            .unwrap(),
        0
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_entry_fires_nothing_and_resumed_waits_for_its_next_tick() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    add_every_second(&client, "pausable", "pause").await;
    let _fleet = workers(&redis, 2);
    wait_until("2 ticks to run", Duration::from_secs(30), || async {
        runs(&client, "pause").await.len() >= 2
    })
    .await;

    let out = run_cli(WORKER, &redis.url(), &["cron", "pause", "pausable"]);
    assert!(out.status.success());
    let paused = client.redis_time().await.unwrap();
    assert!(
        gator_core::Admin::new(client.clone())
            .periodic_entries()
            .await
            .unwrap()[0]
            .paused
    );
    wait_for_redis_time(&client, paused + 3500).await;
    let resumed = client.redis_time().await.unwrap();
    let out = run_cli(WORKER, &redis.url(), &["cron", "resume", "pausable"]);
    assert!(out.status.success());
    wait_until(
        "a tick after the resume to run",
        Duration::from_secs(30),
        || async { runs(&client, "pause").await.keys().any(|t| *t > resumed) },
    )
    .await;

    let ticks = runs(&client, "pause").await;
    assert_each_tick_ran_once(&ticks);
    let while_paused: Vec<_> = ticks
        .keys()
        .filter(|t| **t > paused && **t <= resumed)
        .collect();
    assert!(
        while_paused.is_empty(),
        "ticks fired while paused, or on resume: {while_paused:?} (paused at {paused}, resumed at {resumed})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_now_enqueues_once_even_when_paused_and_leaves_the_schedule_alone() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    // Once a year: no tick comes during the test.
    gator_core::Admin::new(client.clone())
        .add_periodic(
            "yearly",
            "0 0 1 1 *",
            Some("UTC"),
            CronTick::call("now".into()),
        )
        .await
        .unwrap();
    gator_core::Admin::new(client.clone())
        .pause_periodic("yearly")
        .await
        .unwrap();
    let last = gator_core::Admin::new(client.clone())
        .periodic_entries()
        .await
        .unwrap()[0]
        .last_fired;
    let _worker = workers(&redis, 1);

    let out = run_cli(WORKER, &redis.url(), &["cron", "run", "yearly"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("yearly: enqueued"));
    wait_until(
        "the run-now job to run",
        Duration::from_secs(30),
        || async { !runs(&client, "now").await.is_empty() },
    )
    .await;
    assert_eq!(runs(&client, "now").await.values().sum::<u32>(), 1);
    let after = &gator_core::Admin::new(client.clone())
        .periodic_entries()
        .await
        .unwrap()[0];
    assert_eq!(after.last_fired, last, "a run-now is not a tick");
    assert!(after.paused, "a run-now does not resume the entry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_lists_entries_and_refuses_unknown_names() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_core::Admin::new(client.clone())
        .add_periodic(
            "report",
            "0 9 * * MON-FRI",
            Some("Europe/Berlin"),
            CronTick::call("cli".into()),
        )
        .await
        .unwrap();
    gator_core::Admin::new(client.clone())
        .pause_periodic("report")
        .await
        .unwrap();

    let out = run_cli(WORKER, &redis.url(), &["cron", "list", "--json"]);
    assert!(out.status.success());
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let entry = &listed[0];
    assert_eq!(entry["name"], "report");
    assert_eq!(entry["cron"], "0 9 * * MON-FRI");
    assert_eq!(entry["tz"], "Europe/Berlin");
    assert_eq!(entry["job"], "cron_tick");
    assert_eq!(entry["queue"], "cron");
    assert_eq!(entry["args"], serde_json::json!(["cli"]));
    assert_eq!(entry["source"], "api");
    assert_eq!(entry["paused"], true);
    assert!(entry["next"].as_u64().is_some());

    let out = run_cli(WORKER, &redis.url(), &["cron", "list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("report") && text.contains("paused"), "{text}");

    for action in ["pause", "resume", "run", "remove"] {
        let out = run_cli(WORKER, &redis.url(), &["cron", action, "no-such-entry"]);
        assert!(!out.status.success(), "cron {action} of an unknown entry");
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("no periodic job named \"no-such-entry\""),
            "cron {action}"
        );
    }
    let out = run_cli(WORKER, &redis.url(), &["cron", "remove", "report"]);
    assert!(out.status.success());
    assert!(
        gator_core::Admin::new(client.clone())
            .periodic_entries()
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_declared_with_cron_is_published_and_fired_by_the_worker() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("cron-declared"), 1);
    wait_until(
        "the declared job to run twice",
        Duration::from_secs(30),
        || async { DECLARED_RUNS.load(Ordering::SeqCst) >= 2 },
    )
    .await;
    let entries = gator_core::Admin::new(client.clone())
        .periodic_entries()
        .await
        .unwrap();
    let declared = entries
        .iter()
        .find(|p| p.entry.name == "every_second")
        .expect("the declared entry is in Redis");
    assert_eq!(declared.entry.tz, "Europe/Berlin");
    assert_eq!(declared.entry.source, gator_core::cron::Source::Code);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_expressions_zones_and_names_are_refused_and_store_nothing() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    for (name, cron, tz, says) in [
        ("four", "* * * *", None, "has 4 fields"),
        ("minute", "61 * * * *", None, "is invalid"),
        (
            "zone",
            "* * * * *",
            Some("Mars/Olympus"),
            "not an IANA zone",
        ),
        ("", "* * * * *", None, "1 to 200 bytes"),
    ] {
        let err = gator_core::Admin::new(client.clone())
            .add_periodic(name, cron, tz, CronTick::call("bad".into()))
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(says), "{err}");
    }
    assert!(
        gator_core::Admin::new(client.clone())
            .periodic_entries()
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_on_a_paused_queue_is_parked_with_its_status_and_runs_on_resume() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_tests::set_flow(&client, "cron", &[FlowSetting::Paused(true)]).await;
    add_every_second(&client, "parked", "parked").await;
    let entry = gator_core::Admin::new(client.clone())
        .periodic_entries()
        .await
        .unwrap()
        .remove(0)
        .entry;
    let added = client.redis_time().await.unwrap();
    wait_for_redis_time(&client, added + 1000).await;
    let now = client.redis_time().await.unwrap();
    let tick = entry.schedule().unwrap().latest_at_or_before(now).unwrap();
    let payload = entry.payload(Some(tick), now);
    let fired = Upkeep::new(client.connection(), client.keys())
        .fire_cron("parked", Some(tick), &payload)
        .await
        .unwrap();
    assert_eq!(fired, Fire::Pushed);
    let flow = gator_core::Admin::new(client.clone())
        .flow_status("cron")
        .await
        .unwrap();
    let parked = flow.parked_jobs() + flow.critical_waiting + flow.backlog;
    assert_eq!(parked, 1, "the tick's job waits parked on the paused queue");
    assert_eq!(
        client.status(&payload.jid).await.unwrap(),
        JobStatus::Queued
    );
    // Only the parked job runs on resume: the workers' own ticks are paused meanwhile.
    gator_core::Admin::new(client.clone())
        .pause_periodic("parked")
        .await
        .unwrap();
    let _worker = workers(&redis, 1);
    gator_tests::set_flow(&client, "cron", &[FlowSetting::Paused(false)]).await;
    wait_until(
        "the parked tick to run",
        Duration::from_secs(30),
        || async { runs(&client, "parked").await.contains_key(&tick) },
    )
    .await;
    assert_eq!(runs(&client, "parked").await, BTreeMap::from([(tick, 1)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_adding_an_entry_for_another_queue_moves_it() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let job = || CronTick::call("moved".into());
    gator_core::Admin::new(client.clone())
        .add_periodic("mover", "0 0 1 1 *", None, job())
        .await
        .unwrap();
    gator_core::Admin::new(client.clone())
        .add_periodic("mover", "0 0 1 1 *", None, job().queue("cron-2"))
        .await
        .unwrap();
    let listed = gator_core::Admin::new(client.clone())
        .periodic_entries()
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].entry.queue, "cron-2");
    let old: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(client.keys().cron_entries("cron"))
        .query_async(&mut client.connection())
        .await
        .unwrap();
    assert!(old.is_empty(), "the old queue still holds {old:?}");
    assert!(
        gator_core::Admin::new(client.clone())
            .remove_periodic("mover")
            .await
            .unwrap()
    );
    assert!(
        !gator_core::Admin::new(client.clone())
            .remove_periodic("mover")
            .await
            .unwrap()
    );
}

/// `cron list` prints a table under a header, like every other listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cron_list_is_a_table_with_headers() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let admin = gator_core::Admin::new(client.clone());
    admin
        .add_periodic("yearly", "0 0 1 1 *", None, CronTick::call("new".into()))
        .await
        .unwrap();
    let mut out = Vec::new();
    gator_worker::cli::AdminCommand::Cron {
        action: gator_worker::cli::cron::CronAction::List { json: false },
    }
    .run(&admin, &mut out)
    .await
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "name", "cron", "tz", "job", "queue", "state", "last", "next"
        ]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[0], "yearly", "{text}");
    assert!(row.contains(&"active"), "{text}");
}
