//! The README's "Unique jobs and debounce" example compiles as shown. Its statements are in
//! async fns that take what they name (`user`, `digest`, `doc`, `text`), between its jobs, in
//! the README's order. Nothing runs: those fns need Redis and are never called.

#![allow(unused_variables)] // the README binds `first` and `jid` to show what they hold

#[path = "readme/check.rs"]
mod readme_check;

use gator::job;
use std::time::Duration;

/// The digest job the README dispatches with a key of its own.
#[job(queue = "reports")]
async fn send_digest(_user: u64, _digest: String) {}

#[allow(unused_imports)] // the README imports the types its comments name
use gator::{Dispatched, UniqueUntil};

#[rustfmt::skip] // the README shows the empty body on one line
#[job(queue = "reports", unique_for = "10m")]
async fn daily_report(day: u32) { /* ... */ }

#[allow(dead_code)] // needs Redis: compiled, never called
#[rustfmt::skip] // the README splits the chain its own way
async fn dispatch_reports(user: u64, digest: String) -> gator::Result<()> {
    let first = DailyReport::call(7).dispatch_unique().await?;        // Dispatched::New(jid)
    let again = DailyReport::call(7).dispatch_unique().await?;        // Dispatched::Duplicate(same jid)
    assert!(again.is_duplicate());
    let jid = DailyReport::call(7).dispatch().await?;                 // plain dispatch: the same jid
    SendDigest::call(user, digest).unique_key(format!("digest:{user}")) // your own key
        .unique_for(Duration::from_secs(3600)).dispatch().await?;
    Ok(())
}

#[rustfmt::skip] // the README shows the empty body on one line
#[job(queue = "search", debounce = "5s")]
async fn reindex(doc: u64, text: String) { /* ... */ }

#[allow(dead_code)] // needs Redis: compiled, never called
#[rustfmt::skip] // the README shows the chain on one line
async fn edit(doc: u64, text: String) -> gator::Result<()> {
    // Each edit pushes the run back; it runs once, 5 s after the last, with the last text.
    Reindex::call(doc, text).unique_key(format!("doc:{doc}")).dispatch().await?;
    Ok(())
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_unique.rs");
    readme_check::assert_shows(
        "docs/guide/unique.md",
        "# Unique jobs and debounce",
        1,
        here,
    );
}
