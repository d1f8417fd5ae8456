//! Item 4 of issue 29: one key Gator did not write (a hash where a list should be, a string
//! for a sorted set or a hash) shows as broken in its own queue's row, with the reason, and
//! every other queue keeps working; enqueueing to it says so, without script details.

use crate::common::{TOKEN, Web, bearer, json, post, status};

/// A dashboard over queues `high` and `low`, each with a job scheduled in an hour; the jid of
/// `high`'s.
pub(crate) fn two_queues() -> (Web, String) {
    let web = Web::start(&["--auth-token", TOKEN]);
    let mut jid = String::new();
    for queue in ["high", "low"] {
        let answer = post(
            &web,
            &format!("/api/queues/{queue}/jobs"),
            &bearer(),
            r#"{"force": true, "job": "send_email", "args": ["a"], "in": "1h"}"#,
        );
        assert_eq!(status(&answer), 201, "{answer}");
        jid = json(&answer)["jid"].as_str().unwrap().to_owned();
    }
    (web, jid)
}

#[test]
fn a_key_of_the_wrong_type_breaks_its_own_queue_row_and_no_other_read() {
    for breakage in [
        ["HSET", "gator:{high}:queue", "a", "b"].as_slice(),
        &["SET", "gator:{high}:dead", "x"],
        &["SET", "gator:{high}:stats", "x"],
        &["SET", "gator:{high}:scheduled", "x"],
        &["SET", "gator:{high}:leases", "x"],
    ] {
        let (web, _) = two_queues();
        if breakage[1].ends_with(":scheduled") {
            web.redis.cli(&["DEL", breakage[1]]);
        }
        web.redis.cli(breakage);
        let queues = web.get("/api/queues", &bearer());
        assert_eq!(status(&queues), 200, "{breakage:?}: {queues}");
        let rows = json(&queues);
        let row = |name: &str| {
            rows.as_array()
                .unwrap()
                .iter()
                .find(|q| q["name"] == name)
                .cloned()
                .unwrap()
        };
        let reason = row("high")["broken"].as_str().unwrap_or("").to_owned();
        assert!(reason.contains("WRONGTYPE"), "{breakage:?}: {reason}");
        assert!(!reason.contains("script:"), "{reason}");
        assert_eq!(row("low")["broken"], serde_json::Value::Null);
        assert_eq!(row("low")["scheduled"], 1, "{breakage:?}");
        for path in [
            "/api/overview",
            "/api/limits",
            "/api/search?q=send_email",
            "/api/processes",
            "/api/scaling",
        ] {
            let answer = web.get(path, &bearer());
            assert_eq!(status(&answer), 200, "{breakage:?} {path}: {answer}");
        }
        let scaling = json(&web.get("/api/scaling", &bearer()));
        assert!(scaling["queues"]["high"]["broken"].is_string(), "{scaling}");
        assert_eq!(scaling["queues"]["low"]["broken"], serde_json::Value::Null);
        let overview = json(&web.get("/api/overview", &bearer()));
        assert_eq!(overview["broken_queues"], serde_json::json!(["high"]));
        let search = json(&web.get("/api/search?q=send_email&places=scheduled", &bearer()));
        assert!(
            search["hits"]
                .as_array()
                .unwrap()
                .iter()
                .any(|h| h["queue"] == "low"),
            "{breakage:?}: {search}"
        );
    }
}

#[test]
fn enqueueing_to_a_broken_queue_says_so_without_script_details_and_stores_nothing() {
    let (web, _) = two_queues();
    web.redis.cli(&["HSET", "gator:{high}:queue", "a", "b"]);
    let answer = post(
        &web,
        "/api/queues/high/jobs",
        &bearer(),
        r#"{"force": true, "job": "send_email", "args": ["b"]}"#,
    );
    assert_eq!(status(&answer), 409, "{answer}");
    let body = json(&answer);
    assert_eq!(body["code"], "broken_queue", "{answer}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains("queue \"high\" is broken"), "{error}");
    for detail in ["script", "@user_script", "f_"] {
        assert!(!error.contains(detail), "{detail} in {error}");
    }
    // No status record says `queued` of a job that is nowhere.
    let records = web.redis.cli(&["KEYS", "gator:{high}:job:*"]);
    let queued: Vec<&str> = records
        .lines()
        .filter(|key| web.redis.cli(&["GET", key]) == "queued")
        .collect();
    assert!(
        queued.is_empty(),
        "records of jobs stored nowhere: {queued:?}"
    );
    // The other queue takes jobs as ever.
    let ok = post(
        &web,
        "/api/queues/low/jobs",
        &bearer(),
        r#"{"force": true, "job": "send_email", "args": ["c"]}"#,
    );
    assert_eq!(status(&ok), 201, "{ok}");
}
