//! A job that waits for a reply, and one that is cancelled, in one process. `place_order`
//! sends an order and waits for the partner's confirmation (correlation key `order:<n>`);
//! the confirmation comes later from "elsewhere" (here, the main task, as a webhook handler
//! would) and `confirm_order` runs with it, typed. A second order is cancelled while it waits,
//! and a long export is cancelled while it runs.
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 cargo run -p gator-examples --example replies`
//! (`scripts/demo` runs it against a private Redis). It stops once both are settled.

use gator::reply::Delivery;
use gator::{Cancellation, Client, Context, JobError, JobStatus, job};
use gator::{CancellationToken, Worker};
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Serialize, Deserialize)]
struct Confirmation {
    order: u64,
    accepted: bool,
}

#[job(queue = "orders")]
async fn place_order(ctx: Context, order: u64) -> Result<(), JobError> {
    println!("  place_order {order}: sent to the partner; waiting for its confirmation");
    ctx.await_reply_then(
        format!("order:{order}"),
        Duration::from_secs(300),
        ConfirmOrder::call(order),
    );
    Ok(())
}

#[job(queue = "orders")]
async fn confirm_order(ctx: Context, order: u64) -> Result<(), JobError> {
    let confirmation: Option<Confirmation> = ctx.reply()?;
    println!("  confirm_order {order}: {confirmation:?}");
    Ok(())
}

#[job(queue = "exports")]
async fn export(ctx: Context, report: u64) -> Result<(), JobError> {
    println!("  export {report}: started");
    tokio::select! {
        () = ctx.cancelled() => {
            println!("  export {report}: told to stop");
            Err(JobError::new("cancelled"))
        }
        () = tokio::time::sleep(Duration::from_secs(60)) => Ok(()),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6380".into());
    let client = Client::connect(&url).await?;
    let stop = CancellationToken::new();
    let worker = Worker::builder()
        .client(client.clone())
        .queues("orders,exports")
        .concurrency(4)
        .build()?
        .run_until(stop.clone());
    let worker = tokio::spawn(worker);

    let confirmed = PlaceOrder::call(1).through(&client).dispatch().await?;
    let abandoned = PlaceOrder::call(2).through(&client).dispatch().await?;
    let long = Export::call(7).through(&client).dispatch().await?;
    for jid in [&confirmed, &abandoned] {
        wait_for(&client, jid, "awaiting").await?;
    }
    println!("==> order 1 is {:?}", client.status(&confirmed).await?);

    // The partner's webhook, in any process:
    let confirmation = Confirmation {
        order: 1,
        accepted: true,
    };
    let delivery = client.reply("order:1", &confirmation).await?;
    println!("==> reply to order:1: {delivery:?}");
    let again = client.reply("order:1", &confirmation).await?;
    println!("==> the same reply again: {again:?}");
    assert_eq!(again, Delivery::Duplicate);
    client.wait_for(&confirmed, Duration::from_secs(10)).await?;
    let result: Option<Confirmation> = client.result(&confirmed).await?;
    println!("==> order 1 is done; its result is the reply: {result:?}");

    println!(
        "==> cancelling order 2 (waiting): {:?}",
        client.cancel(&abandoned).await?
    );
    wait_for(&client, &long, "running").await?;
    let cancelled = client.cancel(&long).await?;
    println!("==> cancelling export 7 (running): {cancelled:?}");
    assert_eq!(cancelled, Cancellation::Stopping);
    client.wait_for(&long, Duration::from_secs(10)).await?;
    println!("==> export 7 is {}", client.status(&long).await?.name());

    tokio::time::sleep(Duration::from_millis(300)).await; // the handler's line
    stop.cancel();
    worker.await??;
    Ok(())
}

async fn wait_for(client: &Client, jid: &str, state: &str) -> anyhow::Result<JobStatus> {
    for _ in 0..200 {
        let status = client.status(jid).await?;
        if status.name() == state {
            return Ok(status);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("{jid} never became {state}")
}
