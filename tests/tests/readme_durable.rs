//! The "Durable jobs" guide's examples compile as shown: a checkpointed import, an iteration in
//! slices, steps that run once, and a job that sleeps and waits for a reply. Nothing runs here:
//! tests/tests/durable.rs runs the same calls against a real Redis.

#[path = "readme/check.rs"]
mod readme_check;

use gator::durable::{Iteration, Next};
use gator::{Context, JobError, job};
use std::time::Duration;

async fn load_row(_file: &str, _row: u64) -> Result<(), JobError> {
    Ok(())
}

async fn accounts_after(after: u64, _n: usize) -> Result<Vec<u64>, JobError> {
    Ok(vec![after + 1])
}

async fn reindex(_account: u64) -> Result<(), JobError> {
    Ok(())
}

async fn charge_card(order: u64) -> Result<String, JobError> {
    Ok(format!("ch_{order}"))
}

async fn send_receipt(_order: u64, _charge: String) -> Result<(), JobError> {
    Ok(())
}

async fn send_mail(_user: u64, _template: &str) -> Result<(), JobError> {
    Ok(())
}

async fn close_trial(_user: u64, _answer: String) -> Result<(), JobError> {
    Ok(())
}

/// Imports a file row by row; a run that dies starts again at the last row saved.
#[rustfmt::skip]
#[job(queue = "imports", timeout = "2h")]
async fn import_file(ctx: Context, file: String, rows: u64) -> Result<u64, JobError> {
    let mut row: u64 = ctx.resume().unwrap_or(0);
    while row < rows {
        load_row(&file, row).await?;
        row += 1;
        if row.is_multiple_of(1_000) {
            ctx.checkpoint(&row).await?;
        }
    }
    Ok(row)
}

/// Walks every account, 500 at a time, yielding its worker every 5 minutes.
#[rustfmt::skip]
#[job(queue = "maintenance")]
async fn reindex_accounts(ctx: Context) -> Result<(), JobError> {
    let plan = Iteration::default()
        .checkpoint_every(Duration::from_secs(2))
        .max_slice(Duration::from_secs(300));
    ctx.iterate_with(plan, 0u64, |after| async move {
        let page = accounts_after(after, 500).await?;
        let Some(last) = page.last().copied() else {
            return Ok::<_, JobError>(Next::Done);
        };
        for account in &page {
            reindex(*account).await?;
        }
        Ok(Next::Continue(last))
    })
    .await
}

/// Charges once, however many times the receipt fails.
#[rustfmt::skip]
#[job(queue = "billing", retries = 10)]
async fn checkout(ctx: Context, order: u64) -> Result<String, JobError> {
    let charge: String = ctx.step("charge", || charge_card(order)).await?;
    ctx.step("receipt", || send_receipt(order, charge.clone())).await?;
    Ok(charge)
}

/// Starts a trial, reminds the user after three days, and converts or closes after seven.
#[rustfmt::skip]
#[job(queue = "trials")]
async fn trial(ctx: Context, user: u64) -> Result<(), JobError> {
    ctx.step("welcome", || send_mail(user, "welcome")).await?;
    ctx.sleep(Duration::from_secs(3 * 24 * 3600)).await?;
    ctx.step("reminder", || send_mail(user, "reminder")).await?;
    let answer: String = ctx
        .wait_for_reply(&format!("trial:{user}"), Duration::from_secs(4 * 24 * 3600))
        .await?;
    ctx.step("close", || close_trial(user, answer.clone())).await?;
    Ok(())
}

#[test]
fn the_guide_shows_this_code() {
    let here = include_str!("readme_durable.rs");
    readme_check::assert_shows("docs/guide/durable.md", "## Checkpoints", 1, here);
    readme_check::assert_shows("docs/guide/durable.md", "## Iteration", 1, here);
    readme_check::assert_shows("docs/guide/durable.md", "## Steps that run once", 1, here);
    readme_check::assert_shows(
        "docs/guide/durable.md",
        "## Sleep and wait without holding a worker",
        1,
        here,
    );
}
