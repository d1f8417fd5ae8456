//! An embedded worker in an application that installed no `tracing` subscriber is not silent:
//! it says once on stderr that its logs go nowhere, and `.log_to_stderr()` makes its logs (a
//! failed job among them) show. Each case runs the application as a process of its own
//! (`gator-embedded-app`), since a subscriber is process-wide.

use gator_tests::RedisServer;
use std::process::Command;

const APP: &str = env!("CARGO_BIN_EXE_gator-embedded-app");

/// Runs the app for a moment on `redis` with one failing job queued; its stderr.
fn run_app(redis: &RedisServer, flags: &[&str]) -> String {
    redis.cli(&["SADD", "gator:queues", "quiet"]);
    redis.cli(&[
        "RPUSH",
        "gator:{quiet}:queue",
        r#"{"jid":"q1","job":"always_fails","args":[],"queue":"quiet","created_at":1,"enqueued_at":1}"#,
    ]);
    let output = Command::new(APP)
        .arg("1500")
        .args(flags)
        .env("REDIS_URL", redis.url())
        .env_remove("RUST_LOG")
        .output()
        .expect("the app runs");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        redis.cli(&["ZCARD", "gator:{quiet}:dead"]),
        "1",
        "the job ran and failed"
    );
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn a_worker_that_nothing_hears_says_so_once() {
    let redis = RedisServer::start();
    let stderr = run_app(&redis, &[]);
    let warnings = stderr
        .lines()
        .filter(|l| l.contains("no tracing subscriber is installed"))
        .count();
    assert_eq!(warnings, 1, "{stderr}");
    assert!(stderr.contains(".log_to_stderr()"), "{stderr}");
}

#[test]
fn log_to_stderr_shows_the_failed_job() {
    let redis = RedisServer::start();
    let stderr = run_app(&redis, &["--log-to-stderr"]);
    assert!(
        stderr.contains("job failed; moved to the dead set"),
        "{stderr}"
    );
    assert!(!stderr.contains("no tracing subscriber"), "{stderr}");
}
