//! Every flow option, alone and together, in a crate that denies warnings: the generated
//! `flow()` must type-check and warn about nothing. `limit_key` may name any wire argument
//! whose type is `Display`, wherever the `Context` and `State` parameters are.
#![deny(warnings, missing_docs)]

use gator_core::{Context, Job, State, job};

/// A state the worker supplies.
#[derive(Clone)]
pub struct Db;

/// Every option at once; the key is the second wire argument, after a `Context` and a `State`.
#[job(
    queue = "partner",
    priority = 0,
    cost = 4,
    critical,
    limit_key = region,
    rate = "partner api/v1",
    windows = ["05:00-07:00", "22:00-02:00", "23:00-24:00"],
    tz = "America/New_York"
)]
pub async fn sync_all(ctx: Context, batch: u64, State(db): State<Db>, region: String) {
    let _ = (ctx, batch, db, region);
}

/// A raw identifier as the key, of a non-`String` `Display` type, in a sync job.
#[job(limit_key = r#type)]
pub fn by_type(r#type: u32) {
    let _ = r#type;
}

/// One option alone; the job takes no arguments.
#[job(priority = 9999)]
pub fn last_of_all() {}

/// Windows in UTC (no `tz`).
#[job(windows = ["00:00-24:00"])]
pub async fn any_time(n: i64) {
    let _ = n;
}

fn main() {
    let _ = <SyncAll as Job>::flow(&(1, "east".to_owned()));
    let _ = <ByType as Job>::flow(&(7,));
    let _ = <LastOfAll as Job>::flow(&[]);
    let _ = <AnyTime as Job>::flow(&(1,));
}
