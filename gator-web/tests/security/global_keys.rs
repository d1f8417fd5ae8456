//! Item 3e of issue 45: a global key of the wrong type (the known-queues set, the catalogue,
//! the processes, the cron index, the replies' keys ...) degrades what reads it, as one bad key
//! of a queue breaks that queue only: no route answers 500, the key is named with its reason,
//! and a worker keeps serving its queues, logging the key at most once.

use crate::broken::two_queues;
use crate::common::{bearer, json, post, status};
use crate::jobs::RAN;
use crate::logs;
use gator_tests::TestWorker;
use std::time::Duration;

/// Every global key (not of one queue), and what its type should be.
const GLOBAL_KEYS: &[(&str, &str)] = &[
    ("gator:queues", "set"),
    ("gator:processes", "zset"),
    ("gator:shards", "hash"),
    ("gator:flow_queues", "set"),
    ("gator:limiters", "set"),
    ("gator:cron", "hash"),
    ("gator:{catalogue}:jobs", "hash"),
    ("gator:{catalogue}:writers", "hash"),
    ("gator:{replies}:waits", "hash"),
    ("gator:{replies}:deadlines", "zset"),
    ("gator:{replies}:outbox", "list"),
    ("gator:{replies}:stats", "hash"),
    ("gator:relays", "hash"),
];

/// Writes `key` with a type it must not have: a string, or a list for a string key.
fn break_key(web_redis: &gator_tests::RedisServer, key: &str) {
    web_redis.cli(&["DEL", key]);
    web_redis.cli(&["SET", key, "x"]);
}

/// Every route of the API (`api::routes`), as a request that reaches its handler.
fn routes(jid: &str) -> Vec<(&'static str, String, &'static str)> {
    let send = r#"{"force": true, "job": "send_email", "args": ["b"]}"#;
    let by_name = r#"{"force": true, "job": "send_email", "args": ["b"], "queue": "low"}"#;
    let get = |path: &str| ("GET", path.to_owned(), "");
    let post = |path: &str, body| ("POST", path.to_owned(), body);
    vec![
        get("/api/overview"),
        get("/api/history"),
        get("/api/queues"),
        get("/api/queues/high"),
        post("/api/queues/high/jobs", send),
        post("/api/queues/high/pause", ""),
        post("/api/queues/high/resume", ""),
        get("/api/processes"),
        get("/api/scaling"),
        get("/api/outbox"),
        get("/api/sets/scheduled"),
        post("/api/sets/dead/retry", r#"{"all": true}"#),
        post("/api/sets/dead/delete", r#"{"jids": ["nope"]}"#),
        post(&format!("/api/sets/scheduled/jobs/{jid}/retry"), ""),
        post("/api/sets/dead/jobs/nope/delete", ""),
        post("/api/jobs", by_name),
        get("/api/catalogue"),
        get(&format!("/api/jobs/{jid}")),
        get(&format!("/api/jobs/{jid}/position")),
        post(&format!("/api/jobs/{jid}/cancel"), ""),
        get("/api/flows"),
        get("/api/workflows/nope"),
        get("/api/cron"),
        post("/api/cron/nightly/pause", ""),
        post("/api/cron/nightly/resume", ""),
        post("/api/cron/nightly/run", ""),
        get("/api/limits"),
        get("/api/search?q=send_email"),
        post("/api/replies", r#"{"key": "approve:1", "value": true}"#),
        post("/api/queues/low/clear", ""),
    ]
}

#[test]
fn no_route_answers_500_for_a_global_key_of_the_wrong_type_the_overview_names_it_and_the_log_once()
{
    let mut every = Vec::new();
    for (key, kind) in GLOBAL_KEYS {
        let (web, jid) = two_queues();
        break_key(&web.redis, key);
        let mut failed = Vec::new();
        for (method, path, body) in routes(&jid) {
            let answer = match method {
                "GET" => web.get(&path, &bearer()),
                _ => post(&web, &path, &bearer(), body),
            };
            let code = status(&answer);
            let text = json(&answer)["error"].as_str().unwrap_or("").to_owned();
            if code == 0 || code >= 500 || text.contains("script") {
                failed.push(format!("{method} {path}: {code} {text}"));
            }
        }
        let overview = json(&web.get("/api/overview", &bearer()));
        let named = overview["broken_keys"].as_array().is_some_and(|broken| {
            broken
                .iter()
                .any(|b| b["key"] == *key && b["reason"].as_str().is_some_and(|r| r.contains(kind)))
        });
        if !named {
            failed.push(format!(
                "the overview does not name it: {}",
                overview["broken_keys"]
            ));
        }
        // Logged once, not once a request.
        let log = web.stop();
        let lines = (log.lines())
            .filter(|l| l.contains("WRONGTYPE") || l.contains("did not write"))
            .count();
        if lines > 1 {
            failed.push(format!("logged {lines} times"));
        }
        println!("{key}: {} failures", failed.len());
        every.extend(failed.into_iter().map(|f| format!("{key}: {f}")));
    }
    assert!(every.is_empty(), "{}", every.join("\n"));
}

#[test]
fn enqueueing_by_name_with_a_broken_catalogue_is_a_409_naming_the_key() {
    let (web, _) = two_queues();
    break_key(&web.redis, "gator:{catalogue}:jobs");
    let answer = post(
        &web,
        "/api/jobs",
        &bearer(),
        r#"{"job": "send_email", "args": ["b"], "queue": "low"}"#,
    );
    assert_eq!(status(&answer), 409, "{answer}");
    let body = json(&answer);
    assert_eq!(body["code"], "broken_key", "{answer}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("gator:{catalogue}:jobs"), "{error}");
    assert!(!error.contains("script"), "{error}");
    // Forced or not, a dispatch by name needs the options the catalogue holds for a job it
    // knows: refused too, never stored without them.
    let forced = post(
        &web,
        "/api/queues/low/jobs",
        &bearer(),
        r#"{"force": true, "job": "other", "args": []}"#,
    );
    assert_eq!(status(&forced), 409, "{forced}");
    // Once repaired, all is as before.
    web.redis.cli(&["DEL", "gator:{catalogue}:jobs"]);
    let answer = post(
        &web,
        "/api/queues/low/jobs",
        &bearer(),
        r#"{"force": true, "job": "send_email", "args": ["c"]}"#,
    );
    assert_eq!(status(&answer), 201, "{answer}");
}

/// A payload of `send_email(to)` on queue `web`, as another producer would push it.
fn payload(jid: &str, to: &str) -> String {
    serde_json::json!({
        "jid": jid, "job": "send_email", "args": [to], "queue": "web",
        "created_at": 1, "enqueued_at": 1, "attempt": 0,
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_serves_its_queues_with_every_global_key_broken_and_logs_each_once() {
    logs::capture();
    let start = logs::text().len();
    let redis = gator_tests::RedisServer::start_single();
    for (key, _) in GLOBAL_KEYS {
        break_key(&redis, key);
    }
    let worker = TestWorker::start(&redis.url(), Some("web"), 2);
    // One job now, one due in a moment (promoted by the poller), pushed as another producer
    // would: the client's own dispatch is the web tests' business.
    redis.cli(&[
        "RPUSH",
        "gator:{web}:queue",
        &payload("g-now", "globalkeys-now"),
    ]);
    let due = (gator_core::payload::now_ms() + 300).to_string();
    redis.cli(&[
        "ZADD",
        "gator:{web}:scheduled",
        &due,
        &payload("g-later", "globalkeys-later"),
    ]);
    gator_tests::wait_until("both jobs to run", Duration::from_secs(15), || async {
        RAN.tagged("globalkeys-now").len() == 1 && RAN.tagged("globalkeys-later").len() == 1
    })
    .await;
    // Several polls, heartbeats and catalogue renewals later, each key was logged once.
    tokio::time::sleep(Duration::from_secs(3)).await;
    worker.stop().await;
    let logged = logs::text()[start..].to_owned();
    let warned: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("WRONGTYPE") || l.contains("Gator did not write"))
        .collect();
    println!("{} warnings:\n{}", warned.len(), warned.join("\n"));
    for (key, _) in GLOBAL_KEYS {
        let lines = warned.iter().filter(|l| l.contains(key)).count();
        assert!(lines <= 1, "{key} logged {lines} times:\n{logged}");
    }
    assert!(
        warned.len() <= GLOBAL_KEYS.len(),
        "{} warnings:\n{logged}",
        warned.len()
    );
}
