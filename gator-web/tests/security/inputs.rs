//! Item 5 of issue 29: inputs that slipped past their checks. A delay is held to the same
//! horizon as a time; `.` and `..` are no queue names; a job name with control, invisible or
//! bidirectional characters is refused at dispatch, and one pushed by another producer is
//! logged escaped and dead-lettered with its reason.

use crate::common::{TOKEN, Web, bearer, dead_lettered, json, post, push_raw, status};
use crate::{jobs, logs};
use gator_core::Error;
use gator_tests::{TestWorker, client};
use std::time::Duration;

#[test]
fn a_delay_or_a_time_past_five_years_is_refused_over_http_as_at_always_was() {
    let web = Web::start(&["--auth-token", TOKEN]);
    for body in [
        r#"{"force": true, "job": "send_email", "args": ["a"], "in": "10 years"}"#,
        r#"{"force": true, "job": "send_email", "args": ["a"], "in": "1000000000 years"}"#,
        r#"{"force": true, "job": "send_email", "args": ["a"], "at": "2099-01-01T00:00:00Z"}"#,
    ] {
        let answer = post(&web, "/api/queues/web/jobs", &bearer(), body);
        assert_eq!(status(&answer), 400, "{body}: {answer}");
        assert_eq!(json(&answer)["code"], "bad_request", "{answer}");
    }
    // Nothing was stored: no scheduled job, no status record.
    assert_eq!(web.redis.cli(&["ZCARD", "gator:{web}:scheduled"]), "0");
    assert_eq!(web.redis.cli(&["KEYS", "gator:{web}:job:*"]), "");
    // Within the horizon, both are taken.
    let ok = post(
        &web,
        "/api/queues/web/jobs",
        &bearer(),
        r#"{"force": true, "job": "send_email", "args": ["a"], "in": "4 years"}"#,
    );
    assert_eq!(status(&ok), 201, "{ok}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_in_holds_a_delay_to_the_horizon_dispatch_at_holds_a_time_to() {
    let redis = gator_tests::RedisServer::start_single();
    let client = client(&redis.url()).await;
    let years = |n: u64| Duration::from_secs(n * 365 * 24 * 3600);
    for delay in [years(10), years(1_000_000_000), Duration::MAX] {
        let refused = jobs::SendEmail::call("far".into())
            .after(delay)
            .through(&client)
            .dispatch()
            .await;
        assert!(
            matches!(refused, Err(Error::InvalidTime { .. })),
            "{delay:?}: {refused:?}"
        );
    }
    let at = std::time::SystemTime::now() + years(10);
    let refused = jobs::SendEmail::call("far".into())
        .at(at)
        .through(&client)
        .dispatch()
        .await;
    assert!(
        matches!(refused, Err(Error::InvalidTime { .. })),
        "{refused:?}"
    );
    assert_eq!(redis.cli(&["ZCARD", "gator:{web}:scheduled"]), "0");
}

#[test]
fn the_queue_names_dot_and_dotdot_are_refused() {
    let web = Web::start(&["--auth-token", TOKEN]);
    for queue in ["%2E", "%2E%2E", "."] {
        let answer = post(
            &web,
            &format!("/api/queues/{queue}/jobs"),
            &bearer(),
            r#"{"force": true, "job": "send_email", "args": ["a"]}"#,
        );
        assert_eq!(status(&answer), 400, "{queue}: {answer}");
        assert!(
            json(&answer)["error"]
                .as_str()
                .unwrap_or("")
                .contains("invalid queue name"),
            "{answer}"
        );
    }
    assert_eq!(web.redis.cli(&["SMEMBERS", "gator:queues"]), "");
}

#[test]
fn job_names_with_control_bidi_or_zero_width_characters_are_refused_at_dispatch() {
    let web = Web::start(&["--auth-token", TOKEN]);
    for name in [
        "send\\nINFO forged",
        "send\\u001b[31m",
        "send\\u202eliame",
        "send\\u200bemail",
        "send\\u2066email",
    ] {
        let body = format!(r#"{{"job": "{name}", "args": ["a"]}}"#);
        let answer = post(&web, "/api/queues/web/jobs", &bearer(), &body);
        assert_eq!(status(&answer), 400, "{name}: {answer}");
        let error = json(&answer)["error"].as_str().unwrap_or("").to_owned();
        assert!(error.contains("invalid job name"), "{error}");
        assert!(
            !error.contains('\n') && !error.contains('\u{1b}'),
            "{error:?}"
        );
    }
    assert_eq!(web.redis.cli(&["LLEN", "gator:{web}:queue"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_pushed_job_name_with_escapes_is_logged_escaped_and_dead_lettered() {
    logs::capture();
    let redis = gator_tests::RedisServer::start_single();
    let forged = "2026-11-26T00:00:00Z  INFO gator: forged line";
    let name = format!("evil\n{forged}\u{1b}[2J\u{202e}");
    let payload = serde_json::json!({
        "jid": "0193a5f0-0000-7000-8000-00000000e5c1", "job": name, "args": [],
        "queue": "web", "created_at": 1, "enqueued_at": 1,
    });
    push_raw(&redis, &payload).await;
    let worker = TestWorker::start(&redis.url(), Some("web"), 1);
    dead_lettered(&redis).await;
    worker.stop().await;
    let dead = redis.zset_json("gator:{web}:dead").await;
    let error = dead[0]["error"].as_str().unwrap();
    assert!(error.contains("invalid job name"), "{error}");
    assert_eq!(
        dead[0]["attempt"], 1,
        "dead at once, not retried: {}",
        dead[0]
    );
    // The job's name as given is kept, for whoever fixes the producer.
    assert_eq!(dead[0]["job"], name.as_str());
    let logged = logs::text();
    assert!(
        logged.contains("evil\\n2026-11-26T00:00:00Z"),
        "the name is not in the log, escaped: {logged}"
    );
    assert!(
        !logged.lines().any(|line| line.starts_with(forged)),
        "a forged log line: {logged}"
    );
    assert!(!logged.contains('\u{1b}'), "a terminal escape in the log");
    assert!(!logged.contains('\u{202e}'), "a bidi override in the log");
}
