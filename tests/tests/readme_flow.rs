//! The README's flow control recipes compile as shown: "Recipes" (priority, cost, limit keys,
//! rate limiters, tickets, time windows) and "No overlap". Each block is in a module of its own,
//! its statements in an async fn that takes what they name (`client`, `feed`), beside the jobs
//! they dispatch and the README does not show (`NewsletterIssue`, `Poll`, `SyncFeed`). Nothing
//! runs: those fns need Redis and are never called. The modules are left as the README lays
//! them out (one-line job fns), not as rustfmt would.

#![allow(unused_variables)] // the README's one-line jobs take arguments they do not use
#![allow(dead_code)] // the fns that dispatch need Redis: compiled, never called

#[path = "readme/check.rs"]
mod readme_check;

use gator::{Client, job};

/// The newsletter job the priority recipe dispatches.
#[job(queue = "mail")]
async fn newsletter_issue(_issue: u64) {}

/// The feed poller the tickets recipe and the no-overlap recipe dispatch.
#[job(queue = "interval")]
async fn poll(_feed: u64) {}

#[job(queue = "reports")]
async fn sync_feed(_feed: u64) {}

#[rustfmt::skip]
mod urgent_first {
    use super::*;

    #[job(queue = "mail", priority = 10)]
    async fn password_reset(user: u64) -> gator::Result<()> { Ok(()) }

    async fn dispatch() -> gator::Result<()> {
        NewsletterIssue::call(42).priority(500).dispatch().await?;   // per dispatch
        Ok(())
    }
}

#[rustfmt::skip]
mod costs {
    use super::*;

    #[job(queue = "partner")]
    async fn sync_order(id: u64) -> gator::Result<()> { Ok(()) }
    #[job(queue = "partner", cost = 2)]
    async fn export_all(account: u64) -> gator::Result<()> { Ok(()) }
}

#[rustfmt::skip]
mod shares {
    use super::*;

    #[job(queue = "partner", limit_key = region)]
    async fn region_sync(region: String, batch: u64) -> gator::Result<()> { Ok(()) }
}

#[rustfmt::skip]
mod rates {
    use super::*;

    #[job(queue = "mail", rate = "email")]
    async fn send_email(to: String) -> gator::Result<()> { Ok(()) }
}

#[rustfmt::skip]
mod tickets {
    use super::*;

    async fn dispatch(client: Client, feed: u64) -> gator::Result<()> {
        let ticket = client.dispatch_with_ticket(Poll::call(feed).queue("interval")).await?;
        println!("{} jobs ahead, starts at {:?}", ticket.ahead, ticket.expected_start);
        Ok(())
    }
}

#[rustfmt::skip]
mod windows {
    use super::*;

    #[job(queue = "batch", windows = ["05:00-07:00"], tz = "Europe/Berlin")]
    async fn nightly_import(day: String) -> gator::Result<()> { Ok(()) }
}

#[rustfmt::skip]
mod no_overlap {
    use super::*;

    #[job(queue = "reports", no_overlap)]                 // key: wire name + arguments
    async fn rebuild_report(account: u64, month: String) -> gator::Result<()> { Ok(()) }

    #[job(queue = "billing", no_overlap, overlap_key = account)]   // key: one argument
    async fn charge(account: String, cents: u64) -> gator::Result<()> { Ok(()) }

    async fn dispatch() -> gator::Result<()> {
        Charge::call("acme".into(), 500).overlap_key("acme-eu").dispatch().await?; // per dispatch
        SyncFeed::call(7).no_overlap().dispatch().await?;     // a job without the option, this once
        Ok(())
    }
}

#[rustfmt::skip]
mod fair_keys {
    use super::*;

    #[job(queue = "reports", fair_key = tenant)]          // key: one argument
    async fn monthly_report(tenant: String, month: String) -> gator::Result<()> { Ok(()) }

    async fn dispatch() -> gator::Result<()> {
        MonthlyReport::call("acme".into(), "2026-11".into()).dispatch().await?;
        SyncFeed::call(7).fair_key("globex").dispatch().await?;  // any job, this dispatch
        Ok(())
    }
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_flow.rs");
    // One call per block, with literals: readme_coverage.rs reads them.
    readme_check::assert_shows("docs/guide/flow-control.md", "## Recipes", 1, here);
    readme_check::assert_shows("docs/guide/flow-control.md", "## Recipes", 2, here);
    readme_check::assert_shows("docs/guide/flow-control.md", "## Recipes", 3, here);
    readme_check::assert_shows("docs/guide/flow-control.md", "## Recipes", 4, here);
    readme_check::assert_shows("docs/guide/flow-control.md", "## Recipes", 5, here);
    readme_check::assert_shows("docs/guide/flow-control.md", "## Recipes", 6, here);
    readme_check::assert_shows(
        "docs/guide/flow-control.md",
        "### No overlap: one job per key at a time",
        1,
        here,
    );
    readme_check::assert_shows(
        "docs/guide/flow-control.md",
        "### Fair keys: one tenant's backlog never holds back another's",
        1,
        here,
    );
}
