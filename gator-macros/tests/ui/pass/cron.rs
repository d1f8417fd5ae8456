//! Periodic jobs, in a crate that denies warnings: `cron` alone, with `tz`, with a `Context`,
//! and beside `windows` (one `tz` for both); each registers its entry.
#![deny(warnings, missing_docs)]

use gator_core::{Context, job};

/// Every five minutes, in UTC.
#[job(cron = "*/5 * * * *")]
pub async fn sweep() {}

/// At 09:00 in Berlin, with its context.
#[job(cron = "0 9 * * MON-FRI", tz = "Europe/Berlin", queue = "reports")]
pub async fn morning_report(ctx: Context) -> Result<(), String> {
    let _ = ctx;
    Ok(())
}

/// Every ten seconds (six fields), a sync fn, starting only inside its window.
#[job(cron = "*/10 * * * * *", windows = ["05:00-07:00"], tz = "UTC")]
pub fn tick() {}

/// A nickname.
#[job(cron = "@daily")]
pub async fn nightly() {}

fn main() {
    assert_eq!(gator_core::cron::declared().expect("valid entries").len(), 4);
}
