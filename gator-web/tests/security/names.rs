//! Item 3 of issue 45, invisible names and keys: one rule (gator-rules' `visible_name`) for
//! every name or key a user gives. Job names, queue names, fair keys, limit keys, rate
//! limiters, overlap keys, reply keys, unique keys and periodic entries' names with a control,
//! format, default-ignorable or blank-looking character (Hangul fillers, the Braille blank,
//! U+3000, white space alone) are refused: over HTTP with a 400 naming the field, and by the
//! Rust client before anything is stored.

use crate::common::{TOKEN, Web, bearer, json, post, status};
use crate::jobs;
use gator_core::{Admin, Error};
use gator_tests::client;

/// Names and keys that show as nothing, as something else, or not at all: each as JSON text.
const INVISIBLE: &[&str] = &[
    "send\\u3164email",   // Hangul filler
    "\\u115f",            // Hangul choseong filler, alone
    "send\\u2800email",   // Braille pattern blank
    "\\u3000",            // ideographic space, alone
    "   ",                // white space alone
    "send\\ufe0femail",   // variation selector
    "send\\u200bemail",   // zero-width space
    "send\\u202eliame",   // right-to-left override
    "send\\u001b[2J",     // terminal escape
    "send\\nINFO forged", // line break
];

/// The answer to `body` POSTed to `path`: its status and its error text.
fn refused(web: &Web, path: &str, body: &str) -> (u16, String) {
    let answer = post(web, path, &bearer(), body);
    let error = json(&answer)["error"].as_str().unwrap_or("").to_owned();
    (status(&answer), error)
}

#[test]
fn the_http_api_refuses_invisible_job_names_fair_keys_and_reply_keys_with_a_400_naming_the_field() {
    let web = Web::start(&["--auth-token", TOKEN]);
    let mut accepted = Vec::new();
    for text in INVISIBLE {
        let fields = [
            (
                "job",
                format!(r#"{{"force": true, "job": "{text}", "args": []}}"#),
                "invalid job name",
            ),
            (
                "fair_key",
                format!(
                    r#"{{"force": true, "job": "send_email", "args": ["a"], "fair_key": "{text}"}}"#
                ),
                "fair key",
            ),
        ];
        for (field, body, named) in fields {
            let (code, error) = refused(&web, "/api/queues/web/jobs", &body);
            if code != 400 || !error.contains(named) {
                accepted.push(format!("{field} {text}: {code} {error}"));
            }
        }
        let body = format!(r#"{{"key": "{text}", "value": 1}}"#);
        let (code, error) = refused(&web, "/api/replies", &body);
        if code != 400 || !error.contains("reply key") {
            accepted.push(format!("reply key {text}: {code} {error}"));
        }
    }
    assert!(accepted.is_empty(), "accepted:\n{}", accepted.join("\n"));
    assert_eq!(web.redis.cli(&["LLEN", "gator:{web}:queue"]), "0");
    assert_eq!(web.redis.cli(&["EXISTS", "gator:{web}:flow"]), "0");
    assert_eq!(web.redis.cli(&["KEYS", "gator:{replies}:*"]), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_refuses_every_invisible_name_or_key_before_storing_anything() {
    let redis = gator_tests::RedisServer::start_single();
    let client = client(&redis.url()).await;
    let mut accepted = Vec::new();
    for text in INVISIBLE {
        let key: String = serde_json::from_str(&format!("\"{text}\"")).unwrap();
        let call = || jobs::SendEmail::call("ada@example.com".into());
        let tries = [
            (
                "limit key",
                call()
                    .limit_key(key.clone())
                    .through(&client)
                    .dispatch()
                    .await
                    .err(),
            ),
            (
                "fair key",
                call()
                    .fair_key(key.clone())
                    .through(&client)
                    .dispatch()
                    .await
                    .err(),
            ),
            (
                "rate limiter",
                call()
                    .rate_limiter(key.clone())
                    .through(&client)
                    .dispatch()
                    .await
                    .err(),
            ),
            (
                "overlap key",
                call()
                    .overlap_key(key.clone())
                    .through(&client)
                    .dispatch()
                    .await
                    .err(),
            ),
            (
                "unique key",
                call()
                    .unique_key(key.clone())
                    .through(&client)
                    .dispatch()
                    .await
                    .err(),
            ),
            ("reply key", client.reply(&key, &1).await.err()),
            (
                "job name",
                client
                    .dispatch_by_name(&key, serde_json::json!([]))
                    .force()
                    .dispatch()
                    .await
                    .err(),
            ),
            (
                "fair key by name",
                (client.dispatch_by_name("send_email", serde_json::json!(["a"])))
                    .force()
                    .fair_key(key.clone())
                    .dispatch()
                    .await
                    .err(),
            ),
            (
                "periodic name",
                Admin::new(client.clone())
                    .add_periodic(&key, "0 3 * * *", None, call())
                    .await
                    .err(),
            ),
        ];
        for (what, refusal) in tries {
            match refusal {
                Some(
                    Error::InvalidFlow { .. }
                    | Error::InvalidUnique { .. }
                    | Error::InvalidReplyKey { .. }
                    | Error::InvalidJobName { .. }
                    | Error::InvalidCron { .. },
                ) => {}
                other => accepted.push(format!("{what} {text}: {other:?}")),
            }
        }
    }
    assert!(accepted.is_empty(), "accepted:\n{}", accepted.join("\n"));
    assert_eq!(redis.cli(&["LLEN", "gator:{web}:queue"]), "0");
    assert_eq!(redis.cli(&["KEYS", "gator:{web}:*"]), "");
    assert_eq!(redis.cli(&["HLEN", "gator:cron"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_overlap_key_from_arguments_with_a_joiner_is_digested_not_refused() {
    let redis = gator_tests::RedisServer::start_single();
    let client = client(&redis.url()).await;
    // A family emoji is three people joined by U+200D: an argument, not a name anyone chose.
    let family = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}";
    jobs::SendEmail::call(family.into())
        .no_overlap()
        .through(&client)
        .dispatch()
        .await
        .unwrap();
}
