//! Durable jobs in one process: an import that fails halfway and resumes from its checkpoint, a
//! checkout whose charge runs once though its receipt fails, an iteration that yields its
//! worker between slices, and a trial that sleeps and then waits for a reply, holding no worker
//! meanwhile (a quick job runs on the only processor while it sleeps).
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 cargo run -p gator-examples --example durable`
//! (`scripts/demo` runs it against a private Redis). It stops once every job is done.

use gator::durable::{Iteration, Next};
use gator::{CancellationToken, Client, Context, JobError, JobStatus, Worker, job};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Charges made, across every attempt of every checkout.
static CHARGES: AtomicU32 = AtomicU32::new(0);

#[job(queue = "durable", retries = 3, backoff = ["200ms"])]
async fn import(ctx: Context, rows: u64) -> Result<u64, JobError> {
    let mut row: u64 = ctx.resume().unwrap_or(0);
    println!("  import: attempt {} starts at row {row}", ctx.attempt());
    while row < rows {
        if row == rows / 2 && ctx.attempt() == 1 {
            return Err(JobError::new(format!(
                "the database went away at row {row}"
            )));
        }
        row += 1;
        if row.is_multiple_of(10) {
            ctx.checkpoint(&row).await?;
        }
    }
    Ok(row)
}

#[job(queue = "durable", retries = 3, backoff = ["200ms"])]
async fn checkout(ctx: Context, order: u64) -> Result<String, JobError> {
    let charge: String = ctx
        .step("charge", || async {
            CHARGES.fetch_add(1, Ordering::SeqCst);
            println!("  checkout {order}: charging the card");
            Ok::<_, JobError>(format!("ch_{order}"))
        })
        .await?;
    ctx.step("receipt", || async {
        if ctx.attempt() == 1 {
            println!("  checkout {order}: the receipt failed; the job is retried");
            return Err(JobError::new("the mail server said no"));
        }
        println!("  checkout {order}: receipt for {charge} sent");
        Ok(())
    })
    .await?;
    Ok(charge)
}

#[job(queue = "durable")]
async fn walk(ctx: Context, items: u32) -> Result<(), JobError> {
    let plan = Iteration::default().max_slice(Duration::from_millis(200));
    ctx.iterate_with(plan, 0u32, |item| async move {
        if item == items {
            return Ok::<_, JobError>(Next::Done);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(Next::Continue(item + 1))
    })
    .await?;
    println!("  walk: {items} items done, in slices of 200 ms");
    Ok(())
}

#[job(queue = "durable")]
async fn trial(ctx: Context, user: u64) -> Result<String, JobError> {
    ctx.step("welcome", || async {
        println!("  trial {user}: welcome mail sent; sleeping");
        Ok::<_, JobError>(())
    })
    .await?;
    ctx.sleep(Duration::from_secs(1)).await?;
    // Code outside a step runs on every run: this line prints after the sleep, and again
    // when the reply wakes the job.
    println!("  trial {user}: awake; waiting for the user's answer");
    let answer: String = ctx
        .wait_for_reply(&format!("trial:{user}"), Duration::from_secs(60))
        .await?;
    println!("  trial {user}: answered {answer:?}");
    Ok(answer)
}

#[job(queue = "durable")]
async fn quick() {
    println!("  quick: ran on the only processor while the trial slept");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6380".into());
    let client = Client::connect(&url).await?;
    let stop = CancellationToken::new();
    let worker = Worker::builder()
        .client(client.clone())
        .queues("durable")
        .concurrency(1)
        .build()?
        .run_until(stop.clone());
    let worker = tokio::spawn(worker);

    let imported = Import::call(100).through(&client).dispatch().await?;
    client.wait_for(&imported, Duration::from_secs(20)).await?;
    println!(
        "==> import: {:?} rows",
        client.result::<u64>(&imported).await?
    );

    let order = Checkout::call(7).through(&client).dispatch().await?;
    client.wait_for(&order, Duration::from_secs(20)).await?;
    let charges = CHARGES.load(Ordering::SeqCst);
    println!(
        "==> checkout: {:?}, {charges} charge",
        client.result::<String>(&order).await?
    );
    assert_eq!(charges, 1, "the charge ran once");

    let walked = Walk::call(60).through(&client).dispatch().await?;
    client.wait_for(&walked, Duration::from_secs(20)).await?;

    let trial = Trial::call(42).through(&client).dispatch().await?;
    let status = wait_for(&client, &trial, "suspended").await?;
    println!("==> trial 42 is {status:?}");
    let quick = Quick::call().through(&client).dispatch().await?;
    client.wait_for(&quick, Duration::from_secs(20)).await?;
    wait_for_reason(&client, &trial, "reply trial:42").await?;
    client.reply("trial:42", "keep it").await?;
    client.wait_for(&trial, Duration::from_secs(20)).await?;
    println!("==> trial 42: {:?}", client.result::<String>(&trial).await?);

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

async fn wait_for_reason(client: &Client, jid: &str, reason: &str) -> anyhow::Result<()> {
    for _ in 0..200 {
        if let JobStatus::Suspended { reason: now, .. } = client.status(jid).await?
            && now == reason
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("{jid} never waited for {reason}")
}
