//! The README's workflow example compiles as shown: its code is here, around the jobs it names,
//! and a test checks that every line of the README's block is in this file, in order, so the
//! two cannot drift apart. (It once needed a `use gator::Job` it did not show.) The check
//! is `readme/check.rs`, shared by every `readme_*.rs` test.

#[path = "readme/check.rs"]
mod readme_check;

use gator::{Context, Job, JobError, OnFailure, Step, Workflow, job}; // Job: for NAME

#[job(queue = "orders")]
async fn fetch_order(order: u64) -> Result<u64, JobError> {
    Ok(order * 100)
}

#[job(queue = "billing")]
async fn charge_card(_order: u64) {}

#[job(queue = "stock")]
async fn reserve_stock(_order: u64) {}

#[job(queue = "mail")]
async fn email_buyer(_order: u64) {}

#[allow(dead_code)]
async fn dispatch() -> Result<String, gator::Error> {
    let id = Workflow::new()
        .then(FetchOrder::call(42))
        .then_all([
            Step::new(ChargeCard::call(42)),
            Step::new(ReserveStock::call(42)),
            Step::new(EmailBuyer::call(42)).on_failure(OnFailure::Continue),
        ])
        .then(Ship::call(42)) // after all three
        .dispatch()
        .await?; // "0193…@orders": the id names its home queue
    Ok(id)
}

#[job(queue = "orders")]
async fn ship(ctx: Context, order: u64) -> Result<(), JobError> {
    let total: Option<u64> = ctx.parent_result(FetchOrder::NAME)?; // typed, by job name
    let notes: Vec<String> = ctx.parent_results()?; // every parent's, in order
    // ctx.parent_results_of::<T>(name), ctx.parents(), ctx.workflow_id()
    let _ = (total, notes, order);
    Ok(())
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_workflow.rs");
    readme_check::assert_shows(
        "docs/guide/chains-workflows.md",
        "## Workflows: fan-out and fan-in",
        1,
        here,
    );
}
