//! The client's connections: an awaited dispatch takes a direct connection of its own, and
//! these tests check what a user relies on whichever path a dispatch takes: credentials and
//! the database in the URL are honoured, a restarted Redis is used again, and a burst of
//! concurrent dispatches (more than there are direct connections) all land.

use gator_core::{Client, job};
use gator_tests::{RedisServer, ServerOptions, WorkerCommand};
use std::collections::HashSet;
use std::time::Duration;

#[job(queue = "conn")]
fn ping(n: i64) {
    let _ = n;
}

const QUEUE_KEY: &str = "gator:{conn}:queue";

/// The worker binary the process tests run.
const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

async fn queue_len(url: &str) -> usize {
    let mut conn = redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    redis::cmd("LLEN")
        .arg(QUEUE_KEY)
        .query_async(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn dispatch_uses_the_user_password_and_database_in_the_url() {
    let server = RedisServer::start();
    server.cli(&[
        "ACL", "SETUSER", "shop", "on", ">s3cret", "~*", "&*", "+@all",
    ]);
    server.cli(&["CONFIG", "SET", "requirepass", "adminpw"]);
    let url = format!("redis://shop:s3cret@127.0.0.1:{}/3", server.port());
    let client = Client::connect(&url).await.unwrap();

    Ping::call(1).through(&client).dispatch().await.unwrap();
    client.dispatch_many((2..5).map(Ping::call)).await.unwrap();

    assert_eq!(queue_len(&url).await, 4, "every job is in database 3");
    let db0 = format!("redis://shop:s3cret@127.0.0.1:{}/0", server.port());
    assert_eq!(queue_len(&db0).await, 0, "nothing went to database 0");
}

#[tokio::test]
async fn a_wrong_password_is_an_error_not_a_lost_job() {
    let server = RedisServer::start();
    server.cli(&["CONFIG", "SET", "requirepass", "right"]);
    let url = format!("redis://:wrong@127.0.0.1:{}/", server.port());
    let err = Client::connect(&url).await.unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("pass")
            || err.to_string().to_lowercase().contains("auth"),
        "the error says what is wrong: {err}"
    );
    assert!(
        !err.is_connection(),
        "a refused password is not an outage to wait out: {err:?}"
    );
}

/// A worker given a wrong password stops at start with the reason (exit status not 0), instead
/// of logging "cannot reach redis; retrying" for ever as if Redis were down.
#[test]
fn a_worker_with_a_wrong_password_stops_and_says_why() {
    let server = RedisServer::start();
    server.cli(&["CONFIG", "SET", "requirepass", "right"]);
    let url = format!("redis://:wrong@127.0.0.1:{}/", server.port());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let mut worker = WorkerCommand::new(WORKER, &url, "conn")
        .log_to(&log)
        .spawn();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = worker.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the worker still runs 30 s after its password was refused: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "exit status {status}; log: {said}");
    assert!(said.contains("cannot connect to redis"), "log: {said}");
    assert!(!said.contains("retrying"), "log: {said}");
    assert!(!said.contains("wrong@"), "the password is redacted: {said}");
}

// A multi-thread runtime, as applications run: its I/O driver sees Redis close the idle
// connections while the server restarts, so the next dispatch opens fresh ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatch_works_again_once_a_restarted_redis_is_back() {
    let mut server = RedisServer::start_with(ServerOptions {
        appendonly: true,
        fsync_always: true,
        ..ServerOptions::default()
    });
    let client = Client::connect(&server.url()).await.unwrap();
    Ping::call(1).through(&client).dispatch().await.unwrap();

    server.restart();
    // Give the runtime a moment to see the old connections closed.
    tokio::time::sleep(Duration::from_millis(100)).await;

    Ping::call(2).through(&client).dispatch().await.unwrap();
    assert_eq!(queue_len(&server.url()).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_concurrent_dispatches_all_land_once() {
    let server = RedisServer::start();
    let client = Client::connect(&server.url()).await.unwrap();

    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..200 {
        let client = client.clone();
        tasks.spawn(async move { Ping::call(n).through(&client).dispatch().await.unwrap() });
    }
    let mut jids = HashSet::new();
    while let Some(jid) = tasks.join_next().await {
        assert!(jids.insert(jid.unwrap()), "jids are unique");
    }

    assert_eq!(jids.len(), 200);
    assert_eq!(queue_len(&server.url()).await, 200);
}

/// A URL without a scheme, or with one that is not Redis's, is refused with what was wrong and
/// what to write instead; the password never shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_without_a_redis_scheme_says_to_write_redis() {
    for url in ["127.0.0.1:1", "http://:hunter2@127.0.0.1:1", "localhost"] {
        let error = Client::connect(url).await.expect_err(url).to_string();
        assert!(error.contains("redis://"), "{url}: {error}");
        assert!(!error.contains("hunter2"), "{url}: {error}");
        assert!(
            error.contains("127.0.0.1:1") || error.contains("localhost"),
            "{error}"
        );
    }
}

/// A port where something other than Redis answers is named as such, not as a parse error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_answer_as_redis_is_named_so() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                    .await;
            });
        }
    });
    let url = format!("redis://127.0.0.1:{port}");
    let error = Client::connect(&url)
        .await
        .expect_err("not Redis")
        .to_string();
    assert!(error.contains("did not answer as Redis"), "{error}");
}
