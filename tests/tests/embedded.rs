//! A worker run inside an application touches nothing process-wide: the app's default client
//! stays its own unless the builder is asked to install the worker's.

use gator_core::{Client, job};
use gator_tests::{RedisServer, wait_until};
use gator_worker::{CancellationToken, Worker};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static RUNS: AtomicUsize = AtomicUsize::new(0);

#[job(queue = "embedded")]
async fn tick() {
    RUNS.fetch_add(1, Ordering::SeqCst);
}

/// Runs a worker on `client` (installing it as the default with `install`) until it has run
/// one job.
async fn run_one_job(client: &Client, install: bool) {
    let mut builder = Worker::builder()
        .client(client.clone())
        .queues("embedded")
        .jobs(["tick"]);
    if install {
        builder = builder.install_default_client();
    }
    let worker = builder.build().expect("a valid worker");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    let before = RUNS.load(Ordering::SeqCst);
    Tick::call()
        .through(client)
        .dispatch()
        .await
        .expect("dispatch");
    wait_until("the job to run", Duration::from_secs(10), || async {
        RUNS.load(Ordering::SeqCst) > before
    })
    .await;
    stop.cancel();
    running.await.expect("join").expect("the worker ran");
}

// One test, not two: the default client is process-wide, and tests run in parallel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_client_is_the_apps_unless_the_worker_is_asked_to_install_its_own() {
    let redis = RedisServer::start();
    let app = Client::builder(redis.url())
        .namespace("app")
        .connect()
        .await
        .expect("the app's client");
    gator_core::set_default_client(app);
    let worker_client = Client::builder(redis.url())
        .namespace("workers")
        .connect()
        .await
        .expect("the worker's client");

    run_one_job(&worker_client, false).await;
    let default = gator_core::default_client()
        .await
        .expect("a default client");
    assert_eq!(
        default.keys().namespace(),
        "app",
        "the worker replaced the app's default client"
    );

    run_one_job(&worker_client, true).await;
    let default = gator_core::default_client()
        .await
        .expect("a default client");
    assert_eq!(default.keys().namespace(), "workers");
}
