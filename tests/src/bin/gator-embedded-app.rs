//! An application that embeds a worker and installs no `tracing` subscriber, as the embedded
//! tests need: `gator-embedded-app MILLIS [--log-to-stderr]` runs a worker on queue `quiet`
//! (reading `REDIS_URL`) for MILLIS ms, then stops it.

use gator_core::job;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Fails every time, with no retry: the failure an operator must be able to see.
#[job(queue = "quiet", retries = 0)]
async fn always_fails() -> Result<(), String> {
    Err("the quiet failure".into())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let millis: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let url = std::env::var("REDIS_URL").expect("REDIS_URL");
    let mut builder = gator_worker::Worker::builder()
        .redis_url(url)
        .queues("quiet");
    if args.iter().any(|a| a == "--log-to-stderr") {
        builder = builder.log_to_stderr();
    }
    let worker = builder.build().expect("a worker");
    let stop = CancellationToken::new();
    let stopper = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(millis)).await;
        stopper.cancel();
    });
    worker.run_until(stop).await.expect("the worker ran");
}
