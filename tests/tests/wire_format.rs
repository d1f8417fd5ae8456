//! A producer in another language pushes the JSON documented in docs/wire-format.md with
//! plain Redis commands, and a Rust worker runs it.

use gator_core::job;
use gator_tests::{RedisServer, TestWorker, wait_until};
use std::sync::Mutex;
use std::time::Duration;

static GREETED: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[job(name = "greeter.hello", queue = "polyglot")]
fn hello(name: String, times: u32) {
    GREETED.lock().unwrap().push(format!("{name} x{times}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_json_pushed_by_another_language_runs_in_a_rust_worker() {
    let redis = RedisServer::start();
    // Exactly what the wire-format doc tells a Python or Node producer to send.
    let payload = r#"{"jid":"0193a5f0-0000-7000-8000-000000000001","job":"greeter.hello","args":["Ada",3],"queue":"polyglot","created_at":1732300000000,"enqueued_at":1732300000000,"attempt":0,"from":"python"}"#;
    redis.cli(&["SADD", "gator:queues", "polyglot"]);
    redis.cli(&["RPUSH", "gator:{polyglot}:queue", payload]);

    let worker = TestWorker::start(&redis.url(), None, 2);
    wait_until("the raw job to run", Duration::from_secs(10), || async {
        !GREETED.lock().unwrap().is_empty()
    })
    .await;
    assert_eq!(*GREETED.lock().unwrap(), vec!["Ada x3"]);
    worker.stop().await;
    assert_eq!(redis.cli(&["LLEN", "gator:{polyglot}:queue"]), "0");
    assert_eq!(redis.cli(&["ZCARD", "gator:{polyglot}:dead"]), "0");
    assert_eq!(redis.cli(&["ZCARD", "gator:{polyglot}:retry"]), "0");
}
