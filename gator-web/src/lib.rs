//! Gator's web dashboard and HTTP API: what Sidekiq's Web UI is to Sidekiq.
//!
//! Run the `gator-web` binary, or mount [`router`] under a prefix of your own axum app:
//!
//! ```no_run
//! use gator_web::{WebConfig, router};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = gator_core::Client::connect("redis://127.0.0.1:6379").await?;
//! let app = axum::Router::new()
//!     // .route("/", ...) your own routes
//!     .nest("/gator", router(client, WebConfig::new().auth_token("s3cret")));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! The pages (`/`, `queues`, `busy`, `scheduled`, `retries`, `dead`, `job`, `flows`, `cron`,
//! `limits`, `search`) are plain HTML with one shared stylesheet and a small script each,
//! embedded in the binary; they fetch the JSON API (`api/...`) every two seconds while the tab
//! is visible. Every link and fetch is relative, so they work under any prefix.
//!
//! Safety, in [`auth`]: bearer token or basic auth ([`WebConfig`]), CSRF protection on every
//! POST, and a read-only mode. Errors are JSON `{"error": "...", "code": "..."}`
//! ([`ApiError`]); Redis being away is a 503, never a crash.

mod api;
pub mod auth;
mod config;
mod error;
mod pages;

pub use config::{BasicAuth, WebConfig};
pub use error::ApiError;

use axum::Router;
use gator_core::Client;
use std::sync::Arc;

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct App {
    pub(crate) client: Client,
    pub(crate) config: Arc<WebConfig>,
    /// The CSRF token of this router: random, made when it is built, shown to the pages in a
    /// meta tag.
    pub(crate) csrf: Arc<str>,
}

/// The dashboard and the API for the Gator data `client` reads, guarded as `config` says.
/// Mount it anywhere: `Router::nest("/gator", router(client, config))`.
pub fn router(client: Client, config: WebConfig) -> Router {
    let app = App {
        client,
        config: Arc::new(config),
        csrf: new_csrf_token().into(),
    };
    Router::new()
        .merge(api::routes())
        .merge(pages::routes())
        .fallback(|| async { ApiError::not_found("no such page or API route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "wrong method: reads are GETs, actions are POSTs",
            )
        })
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::guard,
        ))
        .with_state(app)
}

/// 32 random bytes, hex: unguessable by another site.
fn new_csrf_token() -> String {
    rand::random::<[u8; 32]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
