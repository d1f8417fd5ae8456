//! The dashboard mounted in your own axum app: `gator::web::router` under `/gator`, next to the
//! app's own routes, served by `gator::web::serve` (header timeout, connection cap, the peer
//! addresses the login throttle counts by).
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 GATOR_WEB_TOKEN=$(head -c 24 /dev/urandom | base64) cargo run -p gator-examples --example dashboard`,
//! then open <http://127.0.0.1:3000/gator?token=TOKEN> once (it sets a session cookie). A token
//! needs at least 16 characters. For something to see, run the shop's worker (`--example
//! worker -- --queues high:3,default:1`) and dispatch its jobs (`--example enqueue`). Or ask
//! the API:
//!
//! ```text
//! curl -H "Authorization: Bearer $GATOR_WEB_TOKEN" http://127.0.0.1:3000/gator/api/queues
//! ```

use axum::Router;
use axum::routing::get;
use gator::Client;
use gator::web::{ServeLimits, WebConfig, try_router};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let token = std::env::var("GATOR_WEB_TOKEN")
        .map_err(|_| anyhow::anyhow!("set GATOR_WEB_TOKEN to a token of 16 characters or more"))?;
    let client = Client::connect(&url).await?;

    // The dashboard needs auth of its own here; behind your app's login, `WebConfig::new()`.
    // `try_router` says why a config is unsound (a token under 16 characters) instead of
    // panicking as `router` does.
    let dashboard = try_router(client, WebConfig::new().auth_token(token))?;
    let app = Router::new()
        .route("/", get(|| async { "the shop; its jobs are at /gator" }))
        .nest("/gator", dashboard);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("dashboard on http://127.0.0.1:3000/gator?token=<GATOR_WEB_TOKEN> (Ctrl-C stops)");
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    gator::web::serve(listener, app, ServeLimits::default(), stop).await?;
    Ok(())
}
