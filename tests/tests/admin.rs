//! The admin side of the lifecycle: list, run now, retry from dead and delete the entries of
//! the scheduled, retry and dead sets, through `gator_core::admin` and the `gator-worker`
//! subcommands. Entries are put in the sets with plain ZADDs of the documented payload JSON,
//! so no worker runs here.

use gator_core::Admin;
use gator_core::{SetKind, payload::now_ms};
use gator_tests::{RedisServer, client};
use serde_json::{Value, json};
use std::process::Output;

/// 2024-11-22T18:26:40Z, the first score used below.
const T0: u64 = 1_732_300_000_000;

/// A payload as docs/wire-format.md describes it, as it sits in a retry or dead set.
fn payload(jid: &str, queue: &str, attempt: u32) -> String {
    json!({
        "jid": jid, "job": "send_email", "args": ["ada@example.com"], "queue": queue,
        "created_at": T0, "enqueued_at": T0, "attempt": attempt,
        "error": "smtp down", "failed_at": T0,
    })
    .to_string()
}

/// ZADDs `entries` (score, member) to `gator:{<queue>}:<set>` and records the queue, as the
/// wire-format doc tells other languages to.
fn zadd(redis: &RedisServer, queue: &str, set: &str, entries: &[(u64, &str)]) {
    redis.cli(&["SADD", "gator:queues", queue]);
    let key = format!("gator:{{{queue}}}:{set}");
    let scores: Vec<String> = entries.iter().map(|(s, _)| s.to_string()).collect();
    let mut args = vec!["ZADD", key.as_str()];
    for ((_, member), score) in entries.iter().zip(&scores) {
        args.extend([score.as_str(), member]);
    }
    assert_eq!(redis.cli(&args), entries.len().to_string(), "ZADD {key}");
}

/// The queue's list, parsed.
fn queued(redis: &RedisServer, queue: &str) -> Vec<Value> {
    let raw = redis.cli(&["LRANGE", &format!("gator:{{{queue}}}:queue"), "0", "-1"]);
    raw.lines()
        .map(|line| serde_json::from_str(line).expect("the queue holds payload JSON"))
        .collect()
}

fn zcard(redis: &RedisServer, queue: &str, set: &str) -> String {
    redis.cli(&["ZCARD", &format!("gator:{{{queue}}}:{set}")])
}

#[tokio::test]
async fn list_returns_entries_oldest_first_with_their_scores() {
    let redis = RedisServer::start();
    let (a, b, c) = (
        payload("a", "mail", 1),
        payload("b", "mail", 2),
        payload("c", "bulk", 3),
    );
    zadd(&redis, "mail", "retry", &[(T0 + 2000, &b), (T0, &a)]);
    zadd(&redis, "bulk", "retry", &[(T0 + 1000, &c)]);
    let client = client(&redis.url()).await;

    let mail = gator_core::Admin::new(client.clone())
        .list_set(SetKind::Retry, Some("mail"), 0, 10)
        .await
        .unwrap();
    let got: Vec<_> = mail
        .iter()
        .map(|e| (e.jid(), e.score_ms, e.raw.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (Some("a"), T0, a.as_str()),
            (Some("b"), T0 + 2000, b.as_str())
        ]
    );
    assert_eq!(mail[1].payload.as_ref().unwrap().attempt, 2);

    // Every known queue: merged by score, then paged.
    let all = gator_core::Admin::new(client.clone())
        .list_set(SetKind::Retry, None, 0, 10)
        .await
        .unwrap();
    let jids: Vec<_> = all
        .iter()
        .map(|e| (e.jid().unwrap(), e.queue.as_str()))
        .collect();
    assert_eq!(jids, [("a", "mail"), ("c", "bulk"), ("b", "mail")]);
    let page = gator_core::Admin::new(client.clone())
        .list_set(SetKind::Retry, None, 1, 1)
        .await
        .unwrap();
    assert_eq!(page[0].jid(), Some("c"));
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .set_len(SetKind::Retry, None)
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .set_len(SetKind::Retry, Some("bulk"))
            .await
            .unwrap(),
        1
    );
    assert!(
        gator_core::Admin::new(client.clone())
            .list_set(SetKind::Dead, None, 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn run_now_from_retry_keeps_attempt_and_lands_on_the_queue_tail() {
    let redis = RedisServer::start();
    redis.cli(&[
        "RPUSH",
        "gator:{mail}:queue",
        &payload("waiting", "mail", 0),
    ]);
    zadd(&redis, "mail", "retry", &[(T0, &payload("r1", "mail", 4))]);
    let client = client(&redis.url()).await;

    let before = now_ms();
    assert!(
        gator_core::Admin::new(client.clone())
            .run_now(SetKind::Retry, None, "r1")
            .await
            .unwrap()
    );

    let queue = queued(&redis, "mail");
    assert_eq!(queue.len(), 2);
    assert_eq!(queue[0]["jid"], "waiting");
    assert_eq!(queue[1]["jid"], "r1", "run now goes to the tail");
    assert_eq!(queue[1]["attempt"], 4, "a retry keeps its attempt count");
    assert_eq!(queue[1]["error"], "smtp down");
    assert!(queue[1]["enqueued_at"].as_u64().unwrap() >= before);
    assert_eq!(zcard(&redis, "mail", "retry"), "0");
}

#[tokio::test]
async fn retry_from_dead_resets_attempt_to_0_and_removes_it_from_dead() {
    let redis = RedisServer::start();
    zadd(
        &redis,
        "mail",
        "dead",
        &[
            (T0, &payload("d1", "mail", 25)),
            (T0 + 1, &payload("d2", "mail", 25)),
        ],
    );
    let client = client(&redis.url()).await;

    assert!(
        gator_core::Admin::new(client.clone())
            .run_now(SetKind::Dead, Some("mail"), "d1")
            .await
            .unwrap()
    );

    let queue = queued(&redis, "mail");
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0]["jid"], "d1");
    assert_eq!(
        queue[0]["attempt"].as_u64().unwrap_or(0),
        0,
        "a retried dead job gets every retry again"
    );
    assert_eq!(queue[0]["args"], json!(["ada@example.com"]));
    assert_eq!(
        redis.cli(&["ZRANGE", "gator:{mail}:dead", "0", "-1"]),
        payload("d2", "mail", 25)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_all_now_moves_2500_dead_entries_exactly_once_even_when_two_admins_race() {
    let redis = RedisServer::start();
    redis.cli(&["SADD", "gator:queues", "bulk"]);
    let mut conn = redis.client().await;
    let mut pipe = redis::pipe();
    for i in 0..2500u64 {
        pipe.zadd(
            "gator:{bulk}:dead",
            payload(&format!("j{i:04}"), "bulk", 25),
            T0 + i,
        )
        .ignore();
    }
    pipe.query_async::<()>(&mut conn).await.unwrap();
    let (one, other) = (client(&redis.url()).await, client(&redis.url()).await);
    let (one, other) = (Admin::new(one), Admin::new(other));

    let (a, b) = tokio::join!(
        one.run_all_now(SetKind::Dead, Some("bulk")),
        other.run_all_now(SetKind::Dead, None),
    );

    assert_eq!(
        a.unwrap() + b.unwrap(),
        2500,
        "every entry is counted by exactly one admin"
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{bulk}:queue"]), "2500");
    assert_eq!(zcard(&redis, "bulk", "dead"), "0");
    let mut jids: Vec<String> = queued(&redis, "bulk")
        .iter()
        .inspect(|p| assert_eq!(p["attempt"].as_u64().unwrap_or(0), 0))
        .map(|p| p["jid"].as_str().unwrap().to_owned())
        .collect();
    jids.sort();
    jids.dedup();
    assert_eq!(jids.len(), 2500, "no job was enqueued twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_concurrent_run_now_of_the_same_jid_enqueue_it_once() {
    let redis = RedisServer::start();
    let payloads: Vec<String> = (0..100)
        .map(|i| payload(&format!("s{i}"), "mail", 0))
        .collect();
    let entries: Vec<(u64, &str)> = payloads.iter().map(|p| (T0, p.as_str())).collect();
    zadd(&redis, "mail", "scheduled", &entries);
    let (one, other) = (client(&redis.url()).await, client(&redis.url()).await);
    let (one, other) = (Admin::new(one), Admin::new(other));

    let mut races = tokio::task::JoinSet::new();
    for i in 0..100 {
        let (one, other) = (one.clone(), other.clone());
        races.spawn(async move {
            let jid = format!("s{i}");
            let (a, b) = tokio::join!(
                one.run_now(SetKind::Scheduled, Some("mail"), &jid),
                other.run_now(SetKind::Scheduled, None, &jid),
            );
            usize::from(a.unwrap()) + usize::from(b.unwrap())
        });
    }
    let wins: Vec<usize> = races.join_all().await;

    assert!(
        wins.iter().all(|&w| w == 1),
        "each jid was moved by exactly one of the two: {wins:?}"
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{mail}:queue"]), "100");
    assert_eq!(zcard(&redis, "mail", "scheduled"), "0");
}

#[tokio::test]
async fn delete_job_removes_one_entry_and_clear_set_empties_the_set() {
    let redis = RedisServer::start();
    zadd(
        &redis,
        "mail",
        "scheduled",
        &[
            (T0, &payload("s1", "mail", 0)),
            (T0 + 1, &payload("s2", "mail", 0)),
        ],
    );
    zadd(
        &redis,
        "bulk",
        "scheduled",
        &[(T0, &payload("s3", "bulk", 0))],
    );
    let client = client(&redis.url()).await;

    assert!(
        gator_core::Admin::new(client.clone())
            .delete_job(SetKind::Scheduled, None, "s1")
            .await
            .unwrap()
    );
    assert!(
        !gator_core::Admin::new(client.clone())
            .delete_job(SetKind::Scheduled, None, "s1")
            .await
            .unwrap(),
        "already gone"
    );
    assert_eq!(zcard(&redis, "mail", "scheduled"), "1");

    assert_eq!(
        gator_core::Admin::new(client.clone())
            .clear_set(SetKind::Scheduled, None)
            .await
            .unwrap(),
        2
    );
    assert_eq!(zcard(&redis, "mail", "scheduled"), "0");
    assert_eq!(zcard(&redis, "bulk", "scheduled"), "0");
    assert_eq!(
        redis.cli(&["LLEN", "gator:{mail}:queue"]),
        "0",
        "deleted jobs never run"
    );
}

#[tokio::test]
async fn an_unknown_jid_returns_false_and_a_bad_queue_name_is_an_error() {
    let redis = RedisServer::start();
    zadd(&redis, "mail", "dead", &[(T0, &payload("d1", "mail", 25))]);
    let client = client(&redis.url()).await;

    assert!(
        !gator_core::Admin::new(client.clone())
            .run_now(SetKind::Dead, None, "nope")
            .await
            .unwrap()
    );
    assert!(
        !gator_core::Admin::new(client.clone())
            .run_now(SetKind::Retry, None, "d1")
            .await
            .unwrap(),
        "d1 is dead, not retrying"
    );
    assert!(
        !gator_core::Admin::new(client.clone())
            .run_now(SetKind::Dead, Some("bulk"), "d1")
            .await
            .unwrap(),
        "d1 is in mail"
    );
    assert!(
        !gator_core::Admin::new(client.clone())
            .delete_job(SetKind::Dead, None, "nope")
            .await
            .unwrap()
    );
    assert!(
        gator_core::Admin::new(client.clone())
            .find_job(SetKind::Dead, None, "nope")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(zcard(&redis, "mail", "dead"), "1");
    let err = gator_core::Admin::new(client.clone())
        .run_now(SetKind::Dead, Some("a{b}"), "d1")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("invalid queue name"), "{err}");
}

#[tokio::test]
async fn entries_that_are_not_payloads_are_listed_and_stay_in_dead_on_retry() {
    let redis = RedisServer::start();
    // Text written by another tool, and the entry a worker writes for malformed text.
    let wrapped = json!({
        "jid": "w1", "job": "", "args": [], "queue": "mail", "created_at": T0, "enqueued_at": T0,
        "attempt": 0, "error": "malformed payload: expected value", "failed_at": T0, "raw": "{oops",
    })
    .to_string();
    let job = payload("d1", "mail", 25);
    zadd(
        &redis,
        "mail",
        "dead",
        &[(T0, "not json at all"), (T0 + 1, &wrapped), (T0 + 2, &job)],
    );
    let client = client(&redis.url()).await;

    let entries = gator_core::Admin::new(client.clone())
        .list_set(SetKind::Dead, None, 0, 10)
        .await
        .unwrap();
    let shown: Vec<_> = entries
        .iter()
        .map(|e| (e.is_runnable(), e.unparsed_text()))
        .collect();
    assert_eq!(
        shown,
        [
            (false, Some("not json at all")),
            (false, Some("{oops")),
            (true, None)
        ]
    );

    assert!(
        !gator_core::Admin::new(client.clone())
            .run_now(SetKind::Dead, None, "w1")
            .await
            .unwrap(),
        "no worker could run it"
    );
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .run_all_now(SetKind::Dead, None)
            .await
            .unwrap(),
        1
    );
    assert_eq!(queued(&redis, "mail").len(), 1);
    assert_eq!(
        zcard(&redis, "mail", "dead"),
        "2",
        "both non-payloads stay for a human to read"
    );
    assert!(
        gator_core::Admin::new(client.clone())
            .delete_job(SetKind::Dead, None, "w1")
            .await
            .unwrap()
    );
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .clear_set(SetKind::Dead, Some("mail"))
            .await
            .unwrap(),
        1
    );
}

// ---- the `gator-worker` subcommands, run as a real process ----

fn gator(redis: &RedisServer, args: &[&str]) -> Output {
    gator_tests::run_cli(env!("CARGO_BIN_EXE_gator-test-worker"), &redis.url(), args)
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "exit {}", output.status);
    String::from_utf8(output.stdout.clone()).expect("utf-8 output")
}

#[test]
fn cli_dead_list_prints_one_line_per_entry_then_the_count() {
    let redis = RedisServer::start();
    let long = json!({
        "jid": "d2", "job": "resize", "args": [], "queue": "bulk", "created_at": T0,
        "enqueued_at": T0, "attempt": 25, "error": format!("line one\n{}", "x".repeat(300)),
    })
    .to_string();
    zadd(
        &redis,
        "mail",
        "dead",
        &[(T0, &payload("d1", "mail", 25)), (T0 + 2000, "garbage")],
    );
    zadd(&redis, "bulk", "dead", &[(T0 + 1000, &long)]);

    let out = stdout(&gator(&redis, &["dead", "list"]));
    // A table: a header, one row per entry, columns aligned; then the count.
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    let words = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words(lines[0]), "died queue jid job attempt error");
    assert_eq!(
        words(lines[1]),
        "2024-11-22T18:26:40.000Z mail d1 send_email 25 smtp down"
    );
    assert_eq!(
        lines[1].find("mail"),
        lines[2].find("bulk"),
        "aligned:\n{out}"
    );
    assert!(
        words(lines[2]).starts_with("2024-11-22T18:26:41.000Z bulk d2 resize 25 line one\\nxxx"),
        "{out}"
    );
    assert!(
        lines[2].ends_with("x…") && lines[2].chars().count() < 200,
        "cut: {}",
        lines[2]
    );
    assert_eq!(
        words(lines[3]),
        "2024-11-22T18:26:42.000Z mail - (not a payload) - raw: garbage"
    );
    assert_eq!(lines[4], "3 entries in the dead set of every known queue");

    // --json: every entry with its payload as stored, and the total.
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&gator(&redis, &["dead", "list", "--json"]))).unwrap();
    assert_eq!(json["total"], 3);
    assert_eq!(json["entries"][0]["jid"], "d1");
    assert_eq!(json["entries"][0]["payload"]["error"], "smtp down");
    assert_eq!(json["entries"][2]["payload"], "garbage");
    assert_eq!(json["entries"][2]["runnable"], false);

    let out = stdout(&gator(
        &redis,
        &["dead", "list", "--queue", "mail", "--limit", "1"],
    ));
    let (shown, cursor) = out
        .trim_end()
        .rsplit_once(" --cursor ")
        .unwrap_or_else(|| panic!("no cursor to the next page: {out}"));
    assert!(
        shown.ends_with("1 of 2 entries in the dead set of queue \"mail\" shown; the next ones:"),
        "{out}"
    );
    // The cursor it printed lists the rest.
    let rest = stdout(&gator(
        &redis,
        &[
            "dead", "list", "--queue", "mail", "--limit", "1", "--cursor", cursor,
        ],
    ));
    assert!(
        rest.ends_with("1 shown, the last of 2 in the dead set of queue \"mail\"\n"),
        "{rest}"
    );

    // --namespace is global: it works after the subcommand too.
    let out = stdout(&gator(
        &redis,
        &["dead", "list", "--namespace", "elsewhere"],
    ));
    assert_eq!(out, "0 entries in the dead set of every known queue\n");
}

#[test]
fn cli_dead_retry_all_requeues_every_job_and_leaves_what_is_not_a_payload() {
    let redis = RedisServer::start();
    zadd(
        &redis,
        "mail",
        "dead",
        &[(T0, &payload("d1", "mail", 25)), (T0 + 1, "garbage")],
    );
    zadd(&redis, "bulk", "dead", &[(T0, &payload("d2", "bulk", 7))]);

    let out = stdout(&gator(&redis, &["dead", "retry", "--all"]));

    assert!(out.starts_with("moved 2 jobs from the dead set of every known queue to their queues (attempt reset to 0)\n"), "{out}");
    assert!(out.contains("1 entry still in the dead set"), "{out}");
    assert_eq!(
        queued(&redis, "mail")[0]["attempt"].as_u64().unwrap_or(0),
        0
    );
    assert_eq!(queued(&redis, "bulk")[0]["jid"], "d2");
    assert_eq!(
        redis.cli(&["ZRANGE", "gator:{mail}:dead", "0", "-1"]),
        "garbage"
    );
    assert_eq!(zcard(&redis, "bulk", "dead"), "0");
}

#[test]
fn cli_scheduled_delete_removes_that_job_only() {
    let redis = RedisServer::start();
    zadd(
        &redis,
        "mail",
        "scheduled",
        &[
            (T0, &payload("s1", "mail", 0)),
            (T0, &payload("s2", "mail", 0)),
        ],
    );

    let out = stdout(&gator(&redis, &["scheduled", "delete", "s1"]));

    assert_eq!(
        out,
        "deleted job s1 from the scheduled set of queue \"mail\"\n"
    );
    assert_eq!(
        redis.cli(&["ZRANGE", "gator:{mail}:scheduled", "0", "-1"]),
        payload("s2", "mail", 0)
    );
    assert_eq!(redis.cli(&["LLEN", "gator:{mail}:queue"]), "0");
}

#[test]
fn cli_errors_exit_1_with_a_clear_message() {
    let redis = RedisServer::start();
    zadd(&redis, "mail", "dead", &[(T0, &payload("d1", "mail", 25))]);

    let output = gator(&redis, &["dead", "retry", "nope"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr,
        "gator-worker: no job \"nope\" in the dead set of any known queue\n"
    );

    let output = gator(&redis, &["dead", "run", "d1", "--queue", "a{b}"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid queue name \"a{b}\""));
    assert_eq!(
        zcard(&redis, "mail", "dead"),
        "1",
        "nothing moved on an error"
    );

    let wrapped = json!({
        "jid": "w1", "job": "", "args": [], "queue": "mail", "created_at": T0, "enqueued_at": T0,
        "error": "malformed payload: expected value", "raw": "{oops",
    });
    zadd(&redis, "mail", "dead", &[(T0, &wrapped.to_string())]);
    let output = gator(&redis, &["dead", "retry", "w1"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "job \"w1\" in the dead set of queue \"mail\" is not a payload a worker could run"
        ),
        "{stderr}"
    );

    // `run` is an alias of `retry` on the dead set.
    let out = stdout(&gator(&redis, &["dead", "run", "d1"]));
    assert_eq!(
        out,
        "moved job d1 to the tail of queue \"mail\" (attempt reset to 0)\n"
    );
}

#[test]
fn cli_delete_all_sweeps_2500_entries_a_thousand_at_a_time_to_the_end() {
    let redis = RedisServer::start();
    let members: Vec<String> = (0..2_500)
        .map(|i| payload(&format!("d{i}"), "bulk", 25))
        .collect();
    let entries: Vec<(u64, &str)> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (T0 + i as u64 / 3, m.as_str()))
        .collect();
    zadd(&redis, "bulk", "dead", &entries);

    let out = stdout(&gator(
        &redis,
        &["dead", "delete", "--all", "--queue", "bulk"],
    ));

    assert_eq!(
        out,
        "deleted 2500 entries from the dead set of queue \"bulk\"\n"
    );
    assert_eq!(zcard(&redis, "bulk", "dead"), "0");
}

#[test]
fn cli_queues_and_stats_name_a_broken_global_key_and_still_read_the_queue_asked_for() {
    let redis = RedisServer::start();
    zadd(&redis, "mail", "dead", &[(T0, &payload("d1", "mail", 25))]);
    redis.cli(&["DEL", "gator:queues"]);
    redis.cli(&["SET", "gator:queues", "x"]);

    let said = "key gator:queues is BROKEN: holds a string, not a set";
    for command in ["queues", "stats"] {
        let out = stdout(&gator(&redis, &[command]));
        assert!(out.contains(said), "{command}:\n{out}");
    }
    let out = stdout(&gator(&redis, &["dead", "list", "--queue", "mail"]));
    assert!(out.contains("d1"), "{out}");
    let out = stdout(&gator(&redis, &["dead", "retry", "d1", "--queue", "mail"]));
    assert!(out.starts_with("moved job d1"), "{out}");
}
