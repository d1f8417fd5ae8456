//! The README's "Expiring jobs" example compiles as shown. Its dispatches are in an async fn
//! that takes what they name (`closing_time`), after its jobs. Nothing runs: that fn needs
//! Redis and is never called.

#![allow(unused_variables)] // the README names the jobs' arguments it does not use

#[path = "readme/check.rs"]
mod readme_check;

use gator::job;
use std::time::{Duration, SystemTime};

#[allow(unused_imports)] // the README imports it for the dispatch below
use gator::expiry::OnExpire;

#[rustfmt::skip] // the README shows the empty body on one line
#[job(queue = "offers", expires_in = "10m")]                 // not started in 10 minutes: never runs
async fn send_offer(user: u64) { /* ... */ }

#[rustfmt::skip] // the README shows the empty body on one line
#[job(queue = "offers", expires_in = "30s", on_expire = "drop")] // not kept once expired
async fn refresh_price(item: u64) { /* ... */ }

#[allow(dead_code)] // needs Redis: compiled, never called
#[rustfmt::skip] // the README aligns its comments
async fn dispatch_offers(closing_time: SystemTime) -> gator::Result<()> {
SendOffer::call(7).dispatch().await?;                            // expires 10 minutes from now
SendOffer::call(8).expires_in(Duration::from_secs(60)).dispatch().await?;  // this one in a minute
SendOffer::call(9).expires_at(closing_time).on_expire(OnExpire::Drop).dispatch().await?;
    Ok(())
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_expiring.rs");
    readme_check::assert_shows("docs/guide/scheduling.md", "## Expiring jobs", 1, here);
}
