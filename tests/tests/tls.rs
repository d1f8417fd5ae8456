//! `rediss://` against a real TLS redis-server with a certificate made by the test: dispatch,
//! run and the CLI with the CA file; a wrong CA, a missing client certificate and a wrong
//! password fail with a clear error; and no password shows in any output.

use gator_core::{Client, job};
use gator_tests::{TLS_PASSWORD, TlsRedis, wait_until};
use gator_worker::{CancellationToken, Worker};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[job(queue = "tls")]
async fn over_tls(tag: String) {
    SEEN.lock().unwrap().push(tag);
}

fn seen(tag: &str) -> bool {
    SEEN.lock().unwrap().iter().any(|t| t == tag)
}

const WORKER_BIN: &str = env!("CARGO_BIN_EXE_gator-test-worker");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_are_dispatched_and_run_over_tls_verified_against_the_ca_file() {
    let redis = TlsRedis::start(false);
    let url = redis.url("localhost");
    let client = Client::builder(&url)
        .ca_cert(redis.certs.ca())
        .connect()
        .await
        .expect("a rediss:// client with the test CA connects");
    let jid = OverTls::call("tls-1".into())
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch over TLS");
    assert_eq!(redis.server.cli(&["LLEN", "gator:{tls}:queue"]), "1");

    let worker = Worker::builder()
        .redis_url(&url)
        .ca_cert(redis.certs.ca())
        .queues("tls")
        .poll_interval(Duration::from_millis(50))
        .jobs(["over_tls"])
        .build()
        .expect("a valid worker");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    wait_until(
        "the job to run over TLS",
        Duration::from_secs(10),
        || async { seen("tls-1") },
    )
    .await;
    stop.cancel();
    running.await.unwrap().expect("the worker ran over TLS");
    assert_eq!(redis.server.cli(&["LLEN", "gator:{tls}:queue"]), "0");
    assert!(!jid.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_or_none_fails_with_a_clear_error_that_hides_the_password() {
    let redis = TlsRedis::start(false);
    let url = redis.url("localhost");
    for client in [
        Client::builder(&url).ca_cert(redis.certs.other_ca()),
        Client::builder(&url), // the system roots do not know the test CA
    ] {
        let err = client
            .connect()
            .await
            .expect_err("the server's certificate is not trusted");
        let msg = err.to_string();
        assert!(
            msg.contains("certificate") && msg.contains("--redis-ca-cert"),
            "says it is the certificate, and how to give a CA: {msg}"
        );
        assert!(msg.contains("rediss://gator:***@localhost"), "{msg}");
        assert!(!msg.contains(TLS_PASSWORD), "the password leaked: {msg}");
        assert!(!format!("{err:?}").contains(TLS_PASSWORD), "{err:?}");
    }
    // A CA file that is not there is named.
    let err = Client::builder(&url)
        .ca_cert("/nonexistent/ca.pem")
        .connect()
        .await
        .expect_err("no such file");
    assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_rs_insecure_form_skips_verification() {
    let redis = TlsRedis::start(false);
    let url = format!("{}#insecure", redis.url("127.0.0.1"));
    let client = Client::connect(&url)
        .await
        .expect("#insecure connects without a CA");
    OverTls::call("insecure".into())
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    assert_eq!(redis.server.cli(&["LLEN", "gator:{tls}:queue"]), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_the_client_certificate() {
    let redis = TlsRedis::start(true);
    let url = redis.url("localhost");
    Client::builder(&url)
        .ca_cert(redis.certs.ca())
        .connect()
        .await
        .expect_err("the server asks for a client certificate");
    let client = Client::builder(&url)
        .ca_cert(redis.certs.ca())
        .client_cert(redis.certs.client_cert(), redis.certs.client_key())
        .connect()
        .await
        .expect("connects with the client certificate");
    OverTls::call("mtls".into())
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    assert_eq!(redis.server.cli(&["LLEN", "gator:{tls}:queue"]), "1");
}

#[test]
fn the_cli_lists_over_tls_with_the_ca_from_its_flag_or_the_environment() {
    let redis = TlsRedis::start(false);
    let payload = serde_json::json!({
        "jid": "dead-over-tls", "job": "over_tls", "args": ["x"], "queue": "tls",
        "created_at": 1, "enqueued_at": 1, "attempt": 3, "error": "boom"
    });
    redis
        .server
        .cli(&["ZADD", "gator:{tls}:dead", "1", &payload.to_string()]);
    redis.server.cli(&["SADD", "gator:queues", "tls"]);
    let url = redis.url("localhost");
    let ca = redis.certs.ca().display().to_string();

    let by_flag = Command::new(WORKER_BIN)
        .args(["dead", "list", "--redis-url", &url, "--redis-ca-cert", &ca])
        .env_remove("GATOR_REDIS_CA_CERT")
        .output()
        .expect("run the CLI");
    let by_env = Command::new(WORKER_BIN)
        .args(["dead", "list", "--redis-url", &url])
        .env("GATOR_REDIS_CA_CERT", &ca)
        .output()
        .expect("run the CLI");
    for out in [by_flag, by_env] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(stdout.contains("dead-over-tls"), "{stdout}");
    }

    let wrong_ca = Command::new(WORKER_BIN)
        .args(["dead", "list", "--redis-url", &url])
        .env("GATOR_REDIS_CA_CERT", redis.certs.other_ca())
        .output()
        .expect("run the CLI");
    let stderr = String::from_utf8_lossy(&wrong_ca.stderr);
    assert!(!wrong_ca.status.success());
    assert!(stderr.contains("certificate"), "{stderr}");
    assert!(
        !stderr.contains(TLS_PASSWORD),
        "the password leaked: {stderr}"
    );

    let wrong_password = url.replace(TLS_PASSWORD, "not-the-pw-42");
    let refused = Command::new(WORKER_BIN)
        .args([
            "dead",
            "list",
            "--redis-url",
            &wrong_password,
            "--redis-ca-cert",
            &ca,
        ])
        .output()
        .expect("run the CLI");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains("gator:***@"), "{stderr}");
    assert!(
        !stderr.contains("not-the-pw-42"),
        "the password leaked: {stderr}"
    );
}

#[test]
fn the_worker_binary_runs_over_tls_and_logs_its_url_redacted() {
    let redis = TlsRedis::start(false);
    let url = redis.url("localhost");
    let ca = redis.certs.ca().display().to_string();
    let payload = serde_json::json!({
        "jid": "bin-tls", "job": "count_run", "args": [7], "queue": "tls",
        "created_at": 1, "enqueued_at": 1, "attempt": 0
    });
    redis
        .server
        .cli(&["RPUSH", "gator:{tls}:queue", &payload.to_string()]);
    let log = tempfile::NamedTempFile::new().expect("a log file");
    let mut worker = gator_tests::WorkerProcess(
        Command::new(WORKER_BIN)
            .args([
                "--redis-url",
                &url,
                "--redis-ca-cert",
                &ca,
                "--queues",
                "tls",
            ])
            .env("RUST_LOG", "debug")
            .stdout(Stdio::null())
            .stderr(log.reopen().expect("the log for writing"))
            .spawn()
            .expect("start the worker binary"),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    // count_run writes through the default client, which the binary set to its TLS client.
    while redis.server.cli(&["HGET", "test:runs", "7"]) != "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the job did not run: {}",
            std::fs::read_to_string(log.path()).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gator_tests::terminate(&mut worker).success());
    let text = std::fs::read_to_string(log.path()).expect("read the log");
    assert!(
        text.contains("worker started") && text.contains("rediss://gator:***@localhost"),
        "{text}"
    );
    assert!(!text.contains(TLS_PASSWORD), "the password leaked:\n{text}");
}

#[test]
fn debug_output_never_shows_the_password() {
    let builder = Client::builder("rediss://gator:hunter2@example.com:6380/0");
    let shown = format!("{builder:?}");
    assert!(
        !shown.contains("hunter2") && shown.contains("***"),
        "{shown}"
    );
    let worker = Worker::builder().redis_url("redis://:hunter2@example.com:6380");
    assert!(!format!("{worker:?}").contains("hunter2"), "{worker:?}");
}
