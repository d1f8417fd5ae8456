//! The outbox relay inside `gator-worker` and the `gator-worker outbox` commands, each against
//! a private PostgreSQL and a private Redis, with the tests' worker binary as its own process:
//! a worker given `--outbox URL` says so when the table is missing, relays a committed row once
//! the schema is applied (`outbox migrate`), reports in Redis and on `--metrics-bind`; rows
//! Redis refuses are listed dead, discarded or put back through the CLI, and run once the
//! cause is fixed.

use gator::outbox::EnqueueIn;
use gator::outbox::sqlx::PgPool;
use gator_core::{Admin, Client, job};
use gator_tests::metrics::scrape;
use gator_tests::{
    PostgresServer, RedisServer, WorkerCommand, client, free_port, run_cli, terminate, wait_until,
};
use serde_json::Value;
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

// The worker binary runs these; here they only give typed calls with the same wire names.
#[job]
async fn count_run(_id: u64) {}

#[job(queue = "large")]
async fn keep_blob(_id: u64, _blob: String, _fail: bool, _millis: u64) {}

/// `gator-worker --outbox URL ARGS...`: whether it succeeded, and its stdout then stderr.
fn outbox_cli(redis: &RedisServer, pg: &PostgresServer, args: &[&str]) -> (bool, String) {
    let url = pg.url();
    let mut all = vec!["--outbox", url.as_str()];
    all.extend_from_slice(args);
    let output = run_cli(WORKER, &redis.url(), &all);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// `gator-worker outbox ARGS... --json`, parsed.
fn outbox_json(redis: &RedisServer, pg: &PostgresServer, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let (ok, text) = outbox_cli(redis, pg, &all);
    assert!(ok, "gator-worker {all:?} failed: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The `name  value` line of the status.
fn status_line(text: &str, name: &str) -> String {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name:?} line in:\n{text}"))
        .split_whitespace()
        .skip(1)
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_outbox_asks_for_the_schema_then_relays_a_committed_row_and_reports() {
    let pg = PostgresServer::start();
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let metrics = free_port();
    let _worker = WorkerCommand::new(WORKER, &redis.url(), "default")
        .args(&["--outbox", &pg.url()])
        .args(&["--metrics-bind", &format!("127.0.0.1:{metrics}")])
        .log_to(&log)
        .spawn();
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until(
        "the worker to say the outbox table is missing",
        Duration::from_secs(20),
        || async { logged().contains("run gator-worker outbox migrate") },
    )
    .await;

    let url = pg.url();
    let (ok, said) = outbox_cli(&redis, &pg, &["outbox", "migrate", "--outbox", &url]);
    assert!(ok && said.contains("schema is in place"), "{said}");
    let pool = PgPool::connect(&url).await.unwrap();
    let client: Client = client(&redis.url()).await;
    let mut tx = pool.begin().await.unwrap();
    CountRun::call(7)
        .through(&client)
        .enqueue_in(&mut tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    wait_until(
        "the relayed job to run",
        Duration::from_secs(30),
        || async { redis.cli(&["HGET", "test:runs", "7"]) == "1" },
    )
    .await;

    wait_until(
        "the worker's relay to report",
        Duration::from_secs(20),
        || async {
            outbox_cli(&redis, &pg, &["outbox"])
                .1
                .contains("1 relays reporting")
        },
    )
    .await;
    let (ok, status) = outbox_cli(&redis, &pg, &["outbox"]);
    assert!(ok, "{status}");
    assert_eq!(status_line(&status, "waiting"), "0", "{status}");
    assert_eq!(status_line(&status, "dead"), "0", "{status}");
    let json = outbox_json(&redis, &pg, &["outbox"]);
    let process = Admin::new(client.clone()).processes().await.unwrap();
    assert_eq!(
        json["relays"][0]["relay"], process[0].id,
        "the relay reports under its worker process's id: {json}"
    );
    assert_eq!(json["relays"][0]["relayed"], 1, "{json}");

    let scraped = scrape(metrics).expect("the worker's metrics endpoint");
    for expected in [
        "# HELP gator_outbox_lag_seconds",
        "# HELP gator_outbox_waiting",
        "gator_outbox_waiting 0",
        "gator_outbox_dead 0",
        "gator_outbox_relayed_total 1",
    ] {
        assert!(
            scraped.contains(expected),
            "{expected:?} is not on /metrics:\n{scraped}"
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        redis.cli(&["HGET", "test:runs", "7"]),
        "1",
        "the job ran twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_redis_refuses_are_listed_dead_then_discarded_or_retried_through_the_cli() {
    let pg = PostgresServer::start();
    let redis = RedisServer::start();
    let (ok, said) = outbox_cli(&redis, &pg, &["outbox", "migrate"]);
    assert!(ok, "{said}");
    // A worker holding the default 512 KiB limit, and an app that allows 1 MiB.
    let mut small = WorkerCommand::new(WORKER, &redis.url(), "large")
        .args(&["--outbox", &pg.url()])
        .spawn();
    let app = Client::builder(redis.url().as_str())
        .max_payload(1 << 20)
        .connect()
        .await
        .unwrap();
    let pool = PgPool::connect(&pg.url()).await.unwrap();
    let blob = "x".repeat(600_000);
    let mut tx = pool.begin().await.unwrap();
    let mut jids = Vec::new();
    for id in [1, 2] {
        let call = KeepBlob::call(id, blob.clone(), false, 0).through(&app);
        jids.push(call.enqueue_in(&mut tx).await.unwrap());
    }
    tx.commit().await.unwrap();
    wait_until(
        "both rows to be refused",
        Duration::from_secs(20),
        || async {
            outbox_json(&redis, &pg, &["outbox", "dead"])
                .as_array()
                .map_or(0, Vec::len)
                == 2
        },
    )
    .await;
    terminate(&mut small);

    let dead = outbox_json(&redis, &pg, &["outbox", "dead"]);
    let id_of = |jid: &str| -> String {
        let row = dead.as_array().unwrap().iter().find(|r| r["jid"] == jid);
        let row = row.unwrap_or_else(|| panic!("{jid} is not listed dead: {dead}"));
        assert!(
            row["reason"].as_str().unwrap().contains("over the limit"),
            "{row}"
        );
        row["id"].to_string()
    };
    let (keep, drop) = (id_of(&jids[0]), id_of(&jids[1]));
    let (_, table) = outbox_cli(
        &redis,
        &pg,
        &["outbox", "dead", "--limit", "1", "--offset", "1"],
    );
    let header = table.lines().next().unwrap_or_default();
    for column in ["id", "jid", "queue", "job", "reason", "dead at"] {
        assert!(header.contains(column), "no {column:?} column:\n{table}");
    }
    let rows = table.lines().filter(|l| l.contains("  large  ")).count();
    assert_eq!(rows, 1, "a page of 1 lists one row:\n{table}");
    let (_, status) = outbox_cli(&redis, &pg, &["outbox"]);
    assert_eq!(status_line(&status, "dead"), "2", "{status}");

    let (ok, said) = outbox_cli(&redis, &pg, &["outbox", "discard", &drop]);
    assert!(ok && said.contains("1 dead rows discarded"), "{said}");
    let (ok, said) = outbox_cli(&redis, &pg, &["outbox", "retry", &keep]);
    assert!(ok && said.contains("1 dead rows put back"), "{said}");
    let (ok, said) = outbox_cli(&redis, &pg, &["outbox", "retry", "--all"]);
    assert!(ok && said.contains("0 dead rows put back"), "{said}");
    let (_, status) = outbox_cli(&redis, &pg, &["outbox"]);
    assert_eq!(status_line(&status, "waiting"), "1", "{status}");
    assert_eq!(status_line(&status, "dead"), "0", "{status}");

    // The cause fixed: a worker that takes 1 MiB relays the row put back, and runs its job.
    let _large = WorkerCommand::new(WORKER, &redis.url(), "large")
        .args(&["--outbox", &pg.url(), "--max-payload", "1MiB"])
        .spawn();
    wait_until(
        "the job put back to run",
        Duration::from_secs(30),
        || async { redis.cli(&["STRLEN", "test:blob:1"]) == "600000" },
    )
    .await;
    let (_, status) = outbox_cli(&redis, &pg, &["outbox"]);
    assert_eq!(status_line(&status, "waiting"), "0", "{status}");
    assert_eq!(
        redis.cli(&["EXISTS", "test:started:2"]),
        "0",
        "a discarded row's job ran"
    );
}
