//! A workflow in one process: an order is fetched, then charged, its stock reserved and its
//! buyer emailed in parallel (on three queues), then shipped once all three have succeeded.
//! `ship` reads its parents' results through its context. The workflow's status is printed as
//! it moves, and a step is added to it while it runs.
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 cargo run -p gator-examples --example workflow`
//! (`scripts/demo` runs it against a private Redis). It stops once the workflow is done.

use gator::workflow::{StepState, WorkflowState, WorkflowStatus};
use gator::{
    CancellationToken, Client, Context, Job, JobError, OnFailure, Step, Worker, Workflow, job,
};
use std::time::Duration;

#[job(queue = "orders")]
async fn fetch_order(order: u64) -> Result<u64, JobError> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(order * 100) // the order's total, in cents
}

#[job(queue = "billing")]
async fn charge_card(ctx: Context, order: u64) -> Result<String, JobError> {
    let total: Option<u64> = ctx.parent_result(FetchOrder::NAME)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok(format!(
        "charged {} cents for order {order}",
        total.unwrap_or(0)
    ))
}

#[job(queue = "stock")]
async fn reserve_stock(order: u64) -> Result<String, JobError> {
    tokio::time::sleep(Duration::from_millis(250)).await;
    Ok(format!("reserved the items of order {order}"))
}

/// The email may fail without holding the order up: its step continues on failure.
#[job(queue = "mail", retries = 0)]
async fn email_buyer(order: u64) -> Result<String, JobError> {
    Err(JobError::new(format!(
        "the mail server refused order {order}'s email"
    )))
}

#[job(queue = "orders")]
async fn ship(ctx: Context, order: u64) -> Result<(), JobError> {
    let done: Vec<String> = ctx.parent_results()?;
    println!(
        "  ship: order {order} after {} parents: {done:?}",
        ctx.parents().len()
    );
    Ok(())
}

#[job(queue = "mail")]
async fn ask_for_review(order: u64) -> Result<(), JobError> {
    println!("  ask_for_review: order {order}");
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6380".into());
    let client = Client::connect(&url).await?;

    let id = Workflow::new()
        .then(FetchOrder::call(42))
        .then_all([
            Step::new(ChargeCard::call(42)),
            Step::new(ReserveStock::call(42)),
            Step::new(EmailBuyer::call(42)).on_failure(OnFailure::Continue),
        ])
        .then(Ship::call(42))
        .through(&client)
        .dispatch()
        .await?;
    println!("==> dispatched workflow {id}");

    let stop = CancellationToken::new();
    let worker = Worker::builder()
        .client(client.clone())
        .queues("orders,billing,stock,mail")
        .concurrency(4)
        .build()?
        .run_until(stop.clone());
    let worker = tokio::spawn(worker);

    // Added while it runs: after `ship`, whatever stage it has reached.
    let status = client.workflow_status(&id).await?.expect("just dispatched");
    let ship = status.steps_of(Ship::NAME).next().expect("a ship step");
    client
        .add_to_workflow(&id, AskForReview::call(42), &[ship.jid.as_str()])
        .await?;

    loop {
        let status = client.workflow_status(&id).await?.expect("kept a day");
        show(&status);
        if status.state != WorkflowState::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    stop.cancel();
    worker.await??;
    Ok(())
}

fn show(status: &WorkflowStatus) {
    let steps: Vec<String> = status
        .steps
        .iter()
        .map(|step| {
            let state = match &step.state {
                StepState::Waiting => "waiting",
                StepState::Cancelled => "cancelled",
                StepState::Job(job) => job.name(),
            };
            format!("{} {state}", step.job)
        })
        .collect();
    println!("  {:?}: {}", status.state, steps.join(", "));
}
