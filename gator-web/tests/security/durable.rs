//! A hostile durable state: a payload in the scheduled set whose `durable` field holds
//! thousands of steps with long markup names and large results, and a `suspended` record with
//! a reason of 100 KiB, as another producer (or a hand at redis-cli) could write them. The
//! job's details and the scheduled set's listing serve them bounded: 100 steps listed, names
//! and values cut, the reason cut like an error, all as JSON data (the pages set text only).

use crate::common::{TOKEN, Web, bearer, json, status};
use serde_json::json;

const JID: &str = "hostile-sleeper";
const DUE_MS: u64 = 4_102_444_800_000; // 2100-01-01

/// Parks the hostile job in `web`'s scheduled set with its hostile record.
async fn park_hostile(web: &Web) {
    let markup = "<img src=x onerror=alert(1)>";
    let steps: Vec<_> = (0..3000)
        .map(|i| json!({"name": format!("{markup}{i}{}", "n".repeat(300)), "value": "v".repeat(2000)}))
        .collect();
    let payload = json!({
        "jid": JID, "job": "send_email", "args": ["a@b.c"], "queue": "web",
        "created_at": 1, "enqueued_at": 1,
        "durable": {"cp": markup.repeat(4000), "steps": steps, "sleeps": 3, "slices": 1},
    });
    let mut conn = web.redis.client().await;
    redis::cmd("ZADD")
        .arg("gator:{web}:scheduled")
        .arg(DUE_MS)
        .arg(payload.to_string())
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    let reason = format!("sleep 3 {}", "<b>why</b>".repeat(10_000));
    redis::cmd("SET")
        .arg(format!("gator:{{web}}:job:{JID}"))
        .arg(format!("suspended {DUE_MS} {reason}"))
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    web.redis.cli(&["SADD", "gator:queues", "web"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_durable_state_is_served_bounded_as_data() {
    let web = Web::start(&["--auth-token", TOKEN]);
    park_hostile(&web).await;

    let answer = web.get(&format!("/api/jobs/{JID}"), &bearer());
    assert_eq!(status(&answer), 200, "{}", &answer[..answer.len().min(400)]);
    assert!(answer.len() < 300 * 1024, "{} bytes served", answer.len());
    let job = json(&answer);
    assert_eq!(job["status"]["state"], "suspended");
    let reason = job["status"]["reason"].as_str().unwrap();
    assert!(reason.len() < 4200, "a reason of {} bytes", reason.len());
    let durable = &job["durable"];
    assert_eq!(durable["steps"].as_array().unwrap().len(), 100);
    assert_eq!(durable["steps_total"], 3000);
    assert_eq!(durable["cut"], true);
    for step in durable["steps"].as_array().unwrap() {
        assert!(step["name"].as_str().unwrap().len() < 200, "{step}");
        assert!(step["value"].as_str().unwrap().len() < 1100, "{step}");
    }
    assert!(durable["checkpoint"].as_str().unwrap().len() < 1100);
    assert!(job["payload"].get("durable").is_none(), "served twice");

    let listing = web.get("/api/sets/scheduled", &bearer());
    assert_eq!(status(&listing), 200);
    assert!(listing.len() < 16 * 1024, "{} bytes listed", listing.len());
    let entry = &json(&listing)["entries"][0];
    assert_eq!(entry["jid"], JID);
    let reason = entry["suspended"].as_str().unwrap();
    assert!(
        reason.starts_with("sleep 3 <b>why</b>") && reason.len() < 4200,
        "{} bytes",
        reason.len()
    );
}
