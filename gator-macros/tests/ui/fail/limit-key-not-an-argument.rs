use gator_core::{Context, State, job};

#[derive(Clone)]
struct Db;

// `Context` and `State` come from the worker, not the stored job: no key can be read from them.
#[job(limit_key = ctx)]
async fn key_from_context(ctx: Context, region: String) {
    let _ = (ctx, region);
}

#[job(limit_key = db)]
async fn key_from_state(State(db): State<Db>, region: String, batch: u64) {
    let _ = (db, region, batch);
}

#[job(limit_key = region)]
async fn no_arguments(ctx: Context) {
    let _ = ctx;
}

fn main() {}
