// `Context` and `State<T>` in any position, in sync and async jobs, with any pattern; they are
// not wire arguments, so `call` and `dispatch` take only the others.
use gator_core::{Context, State, job};
use std::sync::Arc;

#[derive(Clone)]
struct Db(Arc<String>);

#[derive(Clone)]
struct Mailer;

#[job(queue = "mail")]
async fn welcome(State(db): State<Db>, to: String, ctx: Context, _mailer: State<Mailer>) {
    let _ = (db.0.len(), to, ctx.jid(), ctx.attempt(), ctx.is_cancelled());
    ctx.cancelled().await;
}

#[job]
fn tally(_: Context, State(db): State<Db>) -> Result<(), String> {
    let _ = db;
    Ok(())
}

#[job]
fn only_ctx(ctx: gator_core::Context) {
    let _ = ctx.chain_id();
}

fn main() {
    let _pending = Welcome::call("ada@example.com".to_owned());
    let _pending = Tally::call();
    let _pending = OnlyCtx::call();
}
