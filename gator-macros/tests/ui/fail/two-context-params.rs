// A job takes at most one `Context`: the second is reported, with the first.
use gator_core::{Context, job};

#[job]
async fn audit(ctx: Context, account: u64, again: Context) {
    let _ = (ctx, account, again);
}

fn main() {}
