//! Job status and results in one process: a job that returns a receipt, one that fails once and
//! is retried, and one that dies; each looked up by its jid while it moves, and the receipt read
//! back typed once it is done.
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 cargo run -p gator-examples --example status`
//! (`scripts/demo` runs it against a private Redis). It stops once every job has finished.

use gator::{CancellationToken, Client, JobStatus, Worker, job};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What a charge returns: kept with its status, read back with `Client::result`.
#[derive(Debug, Serialize, Deserialize)]
struct Receipt {
    order: u64,
    cents: u64,
}

#[job(queue = "billing")]
async fn charge(order: u64, cents: u64) -> Result<Receipt, String> {
    tokio::time::sleep(Duration::from_millis(600)).await;
    Ok(Receipt { order, cents })
}

static FAILED_ONCE: AtomicBool = AtomicBool::new(false);

/// Fails on its first attempt, succeeds on its second.
#[job(queue = "billing", backoff = ["1s"])]
async fn refund(order: u64) -> Result<(), String> {
    if !FAILED_ONCE.swap(true, Ordering::SeqCst) {
        return Err(format!("the bank timed out refunding order {order}"));
    }
    Ok(())
}

/// Never succeeds: goes to the dead set.
#[job(queue = "billing", retries = 0)]
async fn void(order: u64) -> Result<(), String> {
    Err(format!("order {order} was already settled"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6380".into());
    let client = Client::connect(&url).await?;

    let charge = Charge::call(1234, 4200).through(&client).dispatch().await?;
    let refund = Refund::call(1234).through(&client).dispatch().await?;
    let void = Void::call(1234).through(&client).dispatch().await?;
    println!("==> dispatched; no worker yet:");
    show(&client, "charge", &charge).await?;

    let stop = CancellationToken::new();
    let worker = Worker::builder()
        .client(client.clone())
        .queues("billing")
        .concurrency(3)
        .build()?
        .run_until(stop.clone());
    let worker = tokio::spawn(worker);

    // A job reads `running` once it has run 100 ms (shorter ones go from queued to done).
    tokio::time::sleep(Duration::from_millis(250)).await;
    println!("==> a worker runs them:");
    show(&client, "charge", &charge).await?;
    show(&client, "refund", &refund).await?;
    show(&client, "void", &void).await?;

    println!("==> waiting for each to finish:");
    for (name, jid) in [("charge", &charge), ("refund", &refund), ("void", &void)] {
        client.wait_for(jid, Duration::from_secs(10)).await?;
        show(&client, name, jid).await?;
    }
    let receipt: Option<Receipt> = client.result(&charge).await?;
    println!("==> the charge's receipt, typed: {receipt:?}");

    stop.cancel();
    worker.await??;
    Ok(())
}

async fn show(client: &Client, name: &str, jid: &str) -> anyhow::Result<()> {
    let status = client.status(jid).await?;
    let detail = match &status {
        JobStatus::Running { attempt, .. } => format!("attempt {attempt}"),
        JobStatus::Retrying { attempt, error, .. } => {
            format!("after {attempt} attempt(s): {error}")
        }
        JobStatus::Dead { error, .. } => error.clone(),
        JobStatus::Done { attempts, .. } => format!("in {attempts} attempt(s)"),
        _ => String::new(),
    };
    println!("  {name:<7} {:<9} {detail}", status.name());
    Ok(())
}
