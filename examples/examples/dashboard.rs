//! The dashboard mounted in your own axum app: `gator_web::router` under `/gator`, next to the
//! app's own routes.
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 GATOR_WEB_TOKEN=s3cret cargo run -p gator-examples --example dashboard`,
//! then open <http://127.0.0.1:3000/gator?token=s3cret> once (the token becomes a cookie). For
//! something to see, run the shop's worker (`--example worker -- --queues high:3,default:1`)
//! and dispatch its jobs (`--example enqueue`). Or ask the API:
//!
//! ```text
//! curl -H 'Authorization: Bearer s3cret' http://127.0.0.1:3000/gator/api/queues
//! ```

use axum::Router;
use axum::routing::get;
use gator_core::Client;
use gator_web::{WebConfig, router};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let token = std::env::var("GATOR_WEB_TOKEN").unwrap_or_else(|_| "s3cret".into());
    let client = Client::connect(&url).await?;

    // The dashboard needs auth of its own here; behind your app's login, `WebConfig::new()`.
    let app = Router::new()
        .route("/", get(|| async { "the shop; its jobs are at /gator" }))
        .nest("/gator", router(client, WebConfig::new().auth_token(token)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("dashboard on http://127.0.0.1:3000/gator?token=<GATOR_WEB_TOKEN> (Ctrl-C stops)");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
