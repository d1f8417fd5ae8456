//! What `gator-worker`'s subcommands print of text a hostile producer stored (issue 45, item
//! 3): job names, jids, errors, arguments, process ids and hosts, periodic entries, limiter
//! names, fair and limit keys, catalogue entries and shard names holding ESC, a line break,
//! C1 controls and U+202E are shown escaped, never raw: no subcommand, text or `--json`, lets
//! one reach the operator's terminal, and no such text adds a line.

use gator_tests::{RedisServer, run_cli};
use serde_json::{Value, json};

/// Text that would clear the screen, forge a line and reverse what follows, if printed raw.
fn hostile(tag: &str) -> String {
    format!("{tag}\u{1b}[2J\nFORGED\u{202e}\u{85}\u{9b}end")
}

/// The jid `job show` is asked about.
const SHOWN: &str = "0193a5f0-0000-7000-8000-00000000e5c1";

async fn cmd(redis: &RedisServer, args: &[&str]) {
    let mut conn = redis.client().await;
    let mut command = redis::cmd(args[0]);
    for arg in &args[1..] {
        command.arg(*arg);
    }
    command
        .query_async::<redis::Value>(&mut conn)
        .await
        .map(drop)
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
}

fn payload(jid: &str, tag: &str) -> String {
    json!({
        "jid": jid, "job": hostile(&format!("{tag}-job")), "args": [hostile(&format!("{tag}-arg"))],
        "queue": "web", "created_at": 1, "enqueued_at": 1, "attempt": 1,
        "error": hostile(&format!("{tag}-error")),
    })
    .to_string()
}

/// Stores every kind of text the subcommands print, hostile, as raw commands would.
async fn store_hostile_text(redis: &RedisServer) {
    let far = "4102444800000"; // 2100-01-01, ms: registrations and leases that stay live
    cmd(redis, &["SADD", "gator:queues", "web", "flowq"]).await;
    for set in ["dead", "retry", "scheduled"] {
        let entry = payload(&hostile("jid"), set);
        cmd(
            redis,
            &["ZADD", &format!("gator:{{web}}:{set}"), "1", &entry],
        )
        .await;
    }
    // `job show`: a dead job whose record and entry carry hostile text.
    let record = format!("dead 1 1 {}", hostile("record-error"));
    cmd(
        redis,
        &["SET", &format!("gator:{{web}}:job:{SHOWN}"), &record],
    )
    .await;
    cmd(
        redis,
        &["ZADD", "gator:{web}:dead", "2", &payload(SHOWN, "shown")],
    )
    .await;
    // `processes`: a live process with a hostile id, host and queues, running a hostile job.
    let process = hostile("process");
    let description = json!({
        "id": process, "host": hostile("host"), "pid": 42, "worker_id": null,
        "queues": hostile("queues"), "concurrency": 5, "lease_ms": 30_000, "started_at": 1,
    });
    cmd(redis, &["ZADD", "gator:processes", far, &process]).await;
    cmd(
        redis,
        &[
            "SET",
            &format!("gator:process:{process}"),
            &description.to_string(),
        ],
    )
    .await;
    cmd(redis, &["ZADD", "gator:{web}:leases", far, &process]).await;
    let inflight = format!("gator:{{web}}:inflight:{process}");
    cmd(
        redis,
        &["RPUSH", &inflight, &payload(&hostile("running"), "running")],
    )
    .await;
    // `cron list`: a periodic entry with a hostile name and job.
    let name = hostile("cron");
    let entry = json!({
        "name": name, "cron": "0 3 * * *", "tz": "UTC", "queue": "web",
        "job": hostile("cron-job"), "args": [hostile("cron-arg")], "source": "api",
    });
    cmd(redis, &["HSET", "gator:cron", &name, "web"]).await;
    cmd(
        redis,
        &["HSET", "gator:{web}:cron", &name, &entry.to_string()],
    )
    .await;
    // `limiter list`: a shared limiter with a hostile name.
    let limiter = hostile("limiter");
    cmd(redis, &["SADD", "gator:limiters", &limiter]).await;
    cmd(
        redis,
        &[
            "SET",
            &format!("gator:limiter:{{{limiter}}}:rate"),
            "5 1000 1",
        ],
    )
    .await;
    // `queue show`: shares, fair weights, a limiter and units held by hostile keys.
    let key = hostile("key");
    cmd(redis, &["SADD", "gator:flow_queues", "flowq"]).await;
    cmd(
        redis,
        &[
            "HSET",
            "gator:{flowq}:flow",
            "controlled",
            "1",
            "limit",
            "4",
            &format!("share:{key}"),
            "40",
            &format!("fair_weight:{key}"),
            "3",
            &format!("rate:{}", hostile("rate")),
            "5 1000 1",
        ],
    )
    .await;
    cmd(
        redis,
        &[
            "HSET",
            "gator:{flowq}:used",
            "!total",
            "1",
            &format!("k:{key}"),
            "1",
        ],
    )
    .await;
    // `jobs`: a catalogue entry with a hostile name, queue-less options and a hostile runner.
    let job = hostile("catalogued");
    let definition =
        json!({ "job": job, "queue": "web", "retries": 0, "key": hostile("limit-key") });
    cmd(
        redis,
        &[
            "HSET",
            "gator:{catalogue}:jobs",
            &job,
            &definition.to_string(),
        ],
    )
    .await;
    let writer = format!("w\u{1b}[2J\u{202e}x {far}");
    cmd(redis, &["HSET", "gator:{catalogue}:writers", &job, &writer]).await;
    let runners = format!("gator:{{catalogue}}:runners:{job}");
    cmd(
        redis,
        &["HSET", &runners, &hostile("runner"), &format!("{far} web")],
    )
    .await;
    // `shards`: a hostile name in the shard counts.
    cmd(redis, &["HSET", "gator:shards", &hostile("shard"), "3"]).await;
}

/// The first character of `text` that would act on a terminal instead of showing as itself,
/// but for the line breaks that end lines.
fn raw_control(text: &str) -> Option<char> {
    text.chars()
        .find(|c| *c != '\n' && gator_rules::is_hidden(*c))
}

/// Whether `value` holds `needle` in a string somewhere.
fn holds(value: &Value, needle: &str) -> bool {
    match value {
        Value::String(s) => s.contains(needle),
        Value::Array(items) => items.iter().any(|v| holds(v, needle)),
        Value::Object(fields) => fields
            .iter()
            .any(|(k, v)| k.contains(needle) || holds(v, needle)),
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_subcommand_prints_a_stored_control_or_bidi_character_raw_nor_a_forged_line() {
    let redis = RedisServer::start_single();
    store_hostile_text(&redis).await;
    // Each subcommand that prints stored text, with the lines it must print, and the hostile
    // text it must show (escaped) or, with `--json`, hold (as JSON escapes).
    let cases: &[(&[&str], usize, &str)] = &[
        (&["dead", "list"], 4, "dead-job"),
        (&["retry", "list"], 3, "retry-error"),
        (&["scheduled", "list"], 3, "scheduled-job"),
        (&["job", "show", SHOWN], 7, "record-error"),
        (&["processes"], 6, "running-job"),
        (&["cron", "list"], 2, "cron-job"),
        (&["limiter", "list"], 2, "limiter"),
        (&["queue", "show", "flowq"], 7, "key"),
        (&["jobs"], 2, "catalogued"),
        (&["shards"], 1, "shard"),
        (&["queues"], 4, ""),
        (&["stats"], 15, ""),
        (&["scaling"], 4, ""),
    ];
    let mut failures = Vec::new();
    for (args, lines, shown) in cases {
        let output = run_cli(env!("CARGO_BIN_EXE_gator-test-worker"), &redis.url(), args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        if let Some(c) = raw_control(&stdout).or(raw_control(&stderr)) {
            failures.push(format!("{args:?} printed U+{:04X} raw", u32::from(c)));
        }
        if stdout.lines().count() != *lines {
            failures.push(format!(
                "{args:?} printed {} lines, not {lines}",
                stdout.lines().count()
            ));
        }
        if !shown.is_empty()
            && !stdout.contains(&format!("{shown}\\u{{1b}}[2J\\nFORGED\\u{{202e}}"))
        {
            failures.push(format!("{args:?} does not show {shown:?} escaped"));
        }
        if args[0] == "shards" {
            continue; // no `--json`
        }
        let json_args: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
        let output = run_cli(
            env!("CARGO_BIN_EXE_gator-test-worker"),
            &redis.url(),
            &json_args,
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        if let Some(c) = raw_control(&stdout) {
            failures.push(format!("{json_args:?} printed U+{:04X} raw", u32::from(c)));
        }
        match serde_json::from_str::<Value>(&stdout) {
            Ok(value) if shown.is_empty() || holds(&value, &hostile(shown)) => {}
            Ok(_) => failures.push(format!("{json_args:?} lost the text of {shown:?}")),
            Err(e) => failures.push(format!("{json_args:?} is not JSON: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
