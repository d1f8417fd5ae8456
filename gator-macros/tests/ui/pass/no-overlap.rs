//! `no_overlap` alone (keyed by the wire name and arguments) and with `overlap_key` naming a
//! wire argument after a `Context`, beside other flow options, in a crate that denies
//! warnings: the generated `flow()` must type-check, warn about nothing, and set the key.
#![deny(warnings, missing_docs)]

use gator_core::{Context, Job, job};

/// Keyed by its wire name and arguments.
#[job(queue = "reports", no_overlap)]
pub async fn rebuild_report(account: u64, month: String) {
    let _ = (account, month);
}

/// Keyed by one argument, with a limit key too.
#[job(no_overlap, overlap_key = account, limit_key = region, priority = 5)]
pub fn charge(ctx: Context, region: String, account: u64) {
    let _ = (ctx, region, account);
}

/// `overlap_key` alone implies `no_overlap`; a job without arguments has one key.
#[job(overlap_key = account)]
pub async fn by_account(account: String) {
    let _ = account;
}

/// No arguments at all.
#[job(no_overlap)]
pub fn nightly() {}

fn main() {
    let flow = <RebuildReport as Job>::flow(&(7, "2026-11".to_owned()));
    assert_eq!(flow.overlap.as_deref(), Some(r#"rebuild_report:[7,"2026-11"]"#));
    let flow = <Charge as Job>::flow(&("east".to_owned(), 42));
    assert_eq!(flow.overlap.as_deref(), Some("42"));
    let flow = <ByAccount as Job>::flow(&("acme".to_owned(),));
    assert_eq!(flow.overlap.as_deref(), Some("acme"));
    let flow = <Nightly as Job>::flow(&[]);
    assert_eq!(flow.overlap.as_deref(), Some("nightly:[]"));
}
