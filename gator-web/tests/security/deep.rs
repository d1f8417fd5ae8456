//! Item 3 of issue 45, a payload too deep to parse: 100,000 nested arrays pushed raw. What can
//! be read without parsing the arguments (the jid, the name) is kept, so the dead entry shows
//! its reason and is retried or deleted by its jid, over HTTP and with the CLI's `Admin`.

use crate::common::{TOKEN, Web, bearer, dead_lettered, dead_raw, json, post, status};
use gator_tests::{RedisServer, TestWorker};

const DEPTH: usize = 100_000;

/// A payload whose arguments are `DEPTH` nested arrays, closed or not.
fn deep_payload(jid: &str, closed: bool) -> String {
    let close = if closed {
        "]".repeat(DEPTH)
    } else {
        String::new()
    };
    let tail = if closed {
        r#","created_at":1,"enqueued_at":1}"#
    } else {
        ""
    };
    format!(
        r#"{{"jid":"{jid}","job":"send_email","queue":"web","args":[{}{close}]{tail}"#,
        "[".repeat(DEPTH)
    )
}

/// Pushes `text` as another producer would (a raw RPUSH), and records its queue.
async fn push_text(redis: &RedisServer, text: &str) {
    redis::cmd("RPUSH")
        .arg("gator:{web}:queue")
        .arg(text)
        .query_async::<()>(&mut redis.client().await)
        .await
        .unwrap();
    redis.cli(&["SADD", "gator:queues", "web"]);
}

/// A worker takes the job from `web`'s queue, and it is dead-lettered; the worker stops.
async fn worker_takes_it(redis: &RedisServer) {
    let worker = TestWorker::start(&redis.url(), Some("web"), 1);
    dead_lettered(redis).await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_too_deep_to_parse_is_listed_by_its_jid_with_its_reason_and_retried_or_deleted_by_it()
 {
    let web = Web::start(&["--auth-token", TOKEN]);
    let jid = "0193a5f0-0000-7000-8000-0000000dee01";
    push_text(&web.redis, &deep_payload(jid, true)).await;
    worker_takes_it(&web.redis).await;
    let listing = web.get("/api/sets/dead", &bearer());
    let entry = &json(&listing)["entries"][0];
    eprintln!("listed: {entry}");
    assert_eq!(entry["jid"], jid, "{listing}");
    assert_eq!(entry["job"], "send_email", "{entry}");
    let error = entry["error"].as_str().unwrap_or("");
    assert!(error.contains("nested deeper than"), "{entry}");
    // Retried by its jid: back on its queue as it came, the dead entry gone.
    let retried = post(
        &web,
        &format!("/api/sets/dead/jobs/{jid}/retry"),
        &bearer(),
        "",
    );
    eprintln!("retry: {}", retried.lines().next().unwrap_or(""));
    assert_eq!(status(&retried), 200, "{retried}");
    assert_eq!(web.redis.cli(&["ZCARD", "gator:{web}:dead"]), "0");
    let queued = web.redis.cli(&["LINDEX", "gator:{web}:queue", "0"]);
    assert_eq!(
        queued,
        deep_payload(jid, true),
        "not the payload as it came"
    );
    // Taken again, dead again with the same reason; then deleted by its jid.
    worker_takes_it(&web.redis).await;
    let deleted = post(
        &web,
        &format!("/api/sets/dead/jobs/{jid}/delete"),
        &bearer(),
        "",
    );
    eprintln!("delete: {}", deleted.lines().next().unwrap_or(""));
    assert_eq!(status(&deleted), 200, "{deleted}");
    assert_eq!(web.redis.cli(&["ZCARD", "gator:{web}:dead"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_too_deep_whose_arguments_never_close_is_dead_lettered_once_with_a_reason() {
    let redis = RedisServer::start_single();
    let jid = "0193a5f0-0000-7000-8000-0000000dee02";
    let text = deep_payload(jid, false);
    push_text(&redis, &text).await;
    worker_takes_it(&redis).await;
    let dead = dead_raw(&redis).await;
    assert_eq!(dead.len(), 1);
    eprintln!("dead entry: {}", gator_rules::cut(&dead[0], 300));
    let entry: serde_json::Value = serde_json::from_str(&dead[0]).unwrap();
    assert_eq!(entry["jid"], jid, "{}", gator_rules::cut(&dead[0], 300));
    let error = entry["error"].as_str().unwrap_or("");
    assert!(error.contains("nested deeper than"), "{error:?}");
    // Kept once: the text as it came, and nothing more of it.
    assert!(dead[0].len() < text.len() + 1024, "{} bytes", dead[0].len());
    assert_eq!(redis.cli(&["LLEN", "gator:{web}:queue"]), "0");
    // Its status record says it is dead, with the reason.
    let record = redis.cli(&["GET", &format!("gator:{{web}}:job:{jid}")]);
    assert!(record.starts_with("dead "), "{record:?}");
}
