//! `gator::job` generates code that names the runtime through the facade
//! (`::gator::__private::core`): every option that generates a runtime path is used here, in a
//! crate that names no `gator_core`, and the jobs land in the inventory a worker reads.
#![deny(warnings, missing_docs)]

use gator::retry::{RetryContext, RetryDecision};
use gator::{Context, Job, Registry, State, job};
use std::time::Duration;

/// What the stateful job is given.
#[derive(Clone)]
pub struct Greeting(pub String);

/// An async job with context, state and a result: `execute`, `State`, `IntoJobResult`.
#[job(queue = "mail", retries = 3, timeout = "30s", backoff = ["1s", "1m"])]
pub async fn greet(
    to: String,
    ctx: Context,
    State(greeting): State<Greeting>,
) -> Result<u64, String> {
    let _ = (ctx, greeting);
    Ok(to.len() as u64)
}

/// A sync job with every flow option but `no_overlap`.
#[job(queue = "partner", priority = 10, cost = 2, limit_key = region, rate = "partner",
      windows = ["22:00-06:00"], tz = "Europe/Berlin")]
pub fn sync_region(region: String, batch: u64) {
    let _ = (region, batch);
}

/// Overlap by one argument, unique with debounce.
#[job(overlap_key = account, unique_for = "10m", unique_until = "start", debounce = "5s")]
pub fn bill(account: String) {
    let _ = account;
}

/// Periodic, with a retry strategy.
#[job(cron = "*/5 * * * *", retry = never_again)]
pub async fn sweep() {}

/// The retry strategy of `sweep`: the dead set at once.
fn never_again(_: &RetryContext<'_>) -> RetryDecision {
    RetryDecision::Dead
}

#[test]
fn jobs_defined_through_the_facade_are_registered_with_their_options() {
    let registry = Registry::from_inventory().expect("the jobs register");
    assert_eq!(registry.names(), ["bill", "greet", "sweep", "sync_region"]);
    assert_eq!(Greet::QUEUE, "mail");
    assert_eq!(Greet::RETRIES, 3);
    assert_eq!(Greet::TIMEOUT, Some(Duration::from_secs(30)));
    assert!(Bill::UNIQUE.is_some());
    let _ = SyncRegion::call("eu".into(), 1);
}
