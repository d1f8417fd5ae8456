//! Item 3d of issue 45: acting on a set's entry by its jid costs the same whatever the set's
//! size (it is found through its status record, as the job's page finds it), and a bulk action
//! does a bounded amount of work per request and says where to go on.
//!
//! Boundedness is shown by what Redis counts (`INFO commandstats`), never by a clock: an action
//! on 50,000 dead entries issues the commands it issues on 10.

use crate::common::{TOKEN, Web, bearer, json, post, status};
use serde_json::Value;
use std::collections::BTreeMap;

/// 2024-11-22T18:26:40Z: the first death.
const T0: u64 = 1_732_300_000_000;

/// Adds dead jobs `from..from + n` of queue `web` as a worker leaves them: the entry, scored
/// by its time of death, and its status record `dead <at> <attempts> <error>`.
fn fill_dead(web: &Web, from: u64, n: u64) {
    const FILL: &str = r#"
        local key, from, n, t0 = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
        for i = from, from + n - 1 do
          local jid = string.format('dead-%06d', i)
          local at = t0 + i
          redis.call('ZADD', key, at, '{"jid":"' .. jid .. '","job":"send_email","args":["a"],'
            .. '"queue":"web","created_at":' .. t0 .. ',"enqueued_at":' .. t0
            .. ',"attempt":25,"error":"boom","failed_at":' .. at .. '}')
          redis.call('SET', 'gator:{web}:job:' .. jid, 'dead ' .. at .. ' 25 boom')
        end
        return redis.call('ZCARD', key)"#;
    let (from, n, t0) = (from.to_string(), n.to_string(), T0.to_string());
    web.redis
        .cli(&["EVAL", FILL, "1", "gator:{web}:dead", &from, &n, &t0]);
    web.redis.cli(&["SADD", "gator:queues", "web"]);
}

/// The jid of the `i`-th dead job [`fill_dead`] added.
fn jid(i: u64) -> String {
    format!("dead-{i:06}")
}

/// The commands Redis ran for `act` (by name, with their calls), counted by `INFO
/// commandstats` from a reset just before it; the `INFO` and `CONFIG` of the count itself are
/// left out. Commands run inside a script count as the script's own.
fn commands_of(web: &Web, act: impl FnOnce() -> String) -> (String, BTreeMap<String, u64>) {
    web.redis.cli(&["CONFIG", "RESETSTAT"]);
    let answer = act();
    let stats = web.redis.cli(&["INFO", "commandstats"]);
    let calls = stats
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .strip_prefix("calls=")?
                .split(',')
                .next()?
                .parse()
                .ok()?;
            (!["info", "config|resetstat", "config"].contains(&name))
                .then(|| (name.to_owned(), calls))
        })
        .collect();
    (answer, calls)
}

fn total(calls: &BTreeMap<String, u64>) -> u64 {
    calls.values().sum()
}

#[test]
fn acting_on_a_jid_issues_as_many_commands_with_50000_dead_entries_as_with_10() {
    let web = Web::start(&["--auth-token", TOKEN]);
    fill_dead(&web, 0, 10);
    let unknown = |web: &Web| {
        commands_of(web, || {
            post(web, "/api/sets/dead/jobs/nonexistent/retry", &bearer(), "")
        })
    };
    let known = |web: &Web, i: u64, verb: &str| {
        commands_of(web, || {
            post(
                web,
                &format!("/api/sets/dead/jobs/{}/{verb}", jid(i)),
                &bearer(),
                "",
            )
        })
    };
    // Once first, so that loading the scripts (NOSCRIPT, SCRIPT LOAD) is not counted.
    for (i, verb) in [(0, "retry"), (1, "delete")] {
        assert_eq!(status(&known(&web, i, verb).0), 200);
    }
    let page = |web: &Web, i: u64| {
        commands_of(web, || web.get(&format!("/api/jobs/{}", jid(i)), &bearer()))
    };
    let (answer, small_page) = page(&web, 7);
    assert_eq!(json(&answer)["place"], "dead", "{answer}");
    let (answer, small_unknown) = unknown(&web);
    assert_eq!(status(&answer), 404, "{answer}");
    let (answer, small_known) = known(&web, 5, "retry");
    assert_eq!(status(&answer), 200, "{answer}");
    let (answer, small_delete) = known(&web, 6, "delete");
    assert_eq!(status(&answer), 200, "{answer}");

    fill_dead(&web, 10, 50_000);
    // The job's page finds its payload the same way.
    let (answer, large_page) = page(&web, 40_000);
    assert_eq!(json(&answer)["payload"]["jid"], jid(40_000), "{answer}");
    println!("job page, 10 entries: {small_page:?}; 50,010: {large_page:?}");
    assert_eq!(total(&large_page), total(&small_page), "{large_page:?}");
    let (answer, large_unknown) = unknown(&web);
    assert_eq!(status(&answer), 404, "{answer}");
    let (answer, large_known) = known(&web, 30_000, "retry");
    assert_eq!(status(&answer), 200, "{answer}");
    let (answer, large_delete) = known(&web, 30_001, "delete");
    assert_eq!(status(&answer), 200, "{answer}");
    println!("unknown jid, 10 entries: {small_unknown:?}; 50,010: {large_unknown:?}");
    println!("retry, 10 entries: {small_known:?}; 50,010: {large_known:?}");
    println!("delete, 10 entries: {small_delete:?}; 50,010: {large_delete:?}");
    assert_eq!(
        total(&large_unknown),
        total(&small_unknown),
        "{large_unknown:?}"
    );
    assert_eq!(total(&large_known), total(&small_known), "{large_known:?}");
    assert_eq!(
        total(&large_delete),
        total(&small_delete),
        "{large_delete:?}"
    );
    // Two scripts (find, move) and the reads that find the record: a handful.
    assert!(total(&large_known) <= 16, "{large_known:?}");
    // The jobs retried (0, 5 and 30,000) are queued, and the one deleted is gone with its record.
    assert_eq!(web.redis.cli(&["LLEN", "gator:{web}:queue"]), "3");
    assert_eq!(
        web.redis.cli(&["EXISTS", "gator:{web}:job:dead-030001"]),
        "0"
    );
}

#[test]
fn a_jid_among_50000_entries_of_one_millisecond_is_found_in_a_logarithmic_number_of_reads() {
    let web = Web::start(&["--auth-token", TOKEN]);
    // Jobs scheduled for one instant, as `dispatch_at(midnight)` leaves them: one score.
    const FILL: &str = r#"
        for i = 1, tonumber(ARGV[1]) do
          local jid = string.format('at-%06d', i)
          redis.call('ZADD', KEYS[1], ARGV[2], '{"jid":"' .. jid .. '","job":"send_email",'
            .. '"args":[],"queue":"web","created_at":1,"enqueued_at":' .. ARGV[2] .. ',"attempt":0}')
          redis.call('SET', 'gator:{web}:job:' .. jid, 'scheduled ' .. ARGV[2])
        end"#;
    let at = (T0 + 3_600_000).to_string();
    web.redis
        .cli(&["EVAL", FILL, "1", "gator:{web}:scheduled", "50000", &at]);
    web.redis.cli(&["SADD", "gator:queues", "web"]);
    let reads = |calls: &BTreeMap<String, u64>| {
        calls.get("zrange").copied().unwrap_or(0) + calls.get("zscan").copied().unwrap_or(0)
    };
    for (jid, found) in [
        ("at-000001", true),
        ("at-031337", true),
        ("at-050000", true),
        ("at-999999", false),
    ] {
        let (answer, calls) = commands_of(&web, || {
            post(
                &web,
                &format!("/api/sets/scheduled/jobs/{jid}/retry"),
                &bearer(),
                "",
            )
        });
        assert_eq!(status(&answer), if found { 200 } else { 404 }, "{answer}");
        println!("run now {jid} among 50,000 ties: {calls:?}");
        // At most log2(50,000) + 1 = 17 reads of one rank each, not a scan of the set.
        assert!(reads(&calls) <= 17, "{jid}: {calls:?}");
        let queued = web.redis.cli(&["LRANGE", "gator:{web}:queue", "0", "-1"]);
        assert_eq!(
            queued.contains(&format!("\"jid\":\"{jid}\"")),
            found,
            "{queued}"
        );
    }
    assert_eq!(web.redis.cli(&["ZCARD", "gator:{web}:scheduled"]), "49997");
}

/// `POST path` with `body`; the answer's JSON, after checking it is a 200.
fn post_ok(web: &Web, path: &str, body: &str) -> Value {
    let answer = post(web, path, &bearer(), body);
    assert_eq!(status(&answer), 200, "{path} {body}: {answer}");
    json(&answer)
}

#[test]
fn a_bulk_action_over_the_cap_does_1000_and_answers_what_remains() {
    let web = Web::start(&["--auth-token", TOKEN]);
    fill_dead(&web, 0, 2_500);
    // 1,500 jids, 1,200 of them there: the first 1,000 are acted on, the rest handed back.
    let jids: Vec<String> = (0..1_200)
        .map(jid)
        .chain((0..300).map(|i| format!("gone-{i}")))
        .collect();
    let body = serde_json::json!({ "jids": jids }).to_string();
    let first = post_ok(&web, "/api/sets/dead/delete", &body);
    println!(
        "first answer: done {} missing {} remaining {}",
        first["done"],
        first["missing"],
        first["remaining"].as_array().map_or(0, Vec::len)
    );
    assert_eq!(first["done"], 1_000, "{}", first["done"]);
    assert_eq!(first["missing"], serde_json::json!([]));
    let remaining = first["remaining"].as_array().expect("what remains");
    assert_eq!(remaining.len(), 500);
    assert_eq!(remaining[0], jid(1_000));
    let body = serde_json::json!({ "jids": remaining }).to_string();
    let second = post_ok(&web, "/api/sets/dead/delete", &body);
    assert_eq!(second["done"], 200);
    assert_eq!(second["missing"].as_array().map(Vec::len), Some(300));
    assert_eq!(second["remaining"], serde_json::json!([]));
    assert_eq!(web.redis.cli(&["ZCARD", "gator:{web}:dead"]), "1300");

    // All of them: 1,000 a request, each answer's cursor leading to the next.
    let (mut cursor, mut requests, mut done) = (Value::Null, 0, 0);
    loop {
        let body = serde_json::json!({ "all": true, "cursor": cursor }).to_string();
        let answer = post_ok(&web, "/api/sets/dead/retry", &body);
        let moved = answer["done"].as_u64().unwrap();
        assert!(moved <= 1_000, "{moved} in one request");
        (done, requests) = (done + moved, requests + 1);
        cursor = answer["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
        assert!(requests < 10, "no end: {answer}");
    }
    assert_eq!((done, requests), (1_300, 2));
    assert_eq!(web.redis.cli(&["ZCARD", "gator:{web}:dead"]), "0");
    assert_eq!(web.redis.cli(&["LLEN", "gator:{web}:queue"]), "1300");
}
