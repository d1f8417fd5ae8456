use gator_core::{Context, job};

// A value for the flag, a quoted key, a key that is no argument, and `critical` beside it.
#[job(no_overlap = true)]
async fn flag_with_value(account: u64) {
    let _ = account;
}

#[job(overlap_key = "account")]
async fn quoted_key(account: u64) {
    let _ = account;
}

#[job(no_overlap, overlap_key = ctx)]
async fn key_from_context(ctx: Context, account: u64) {
    let _ = (ctx, account);
}

#[job(critical, no_overlap)]
async fn critical_too(account: u64) {
    let _ = account;
}

fn main() {}
