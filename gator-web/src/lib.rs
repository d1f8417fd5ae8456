//! Gator's web dashboard and HTTP API: what Sidekiq's Web UI is to Sidekiq.
//!
//! Run the `gator-web` binary, or mount [`router`] under a prefix of your own axum app and
//! serve it with [`serve`] (or `axum::serve`, without the connection limits):
//!
//! ```no_run
//! use gator_web::{ServeLimits, WebConfig, router};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = gator_core::Client::connect("redis://127.0.0.1:6379").await?;
//! let token = std::env::var("GATOR_WEB_TOKEN")?; // 16 characters or more
//! let app = axum::Router::new()
//!     // .route("/", ...) your own routes
//!     .nest("/gator", router(client, WebConfig::new().auth_token(token)));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! let stop = async { let _ = tokio::signal::ctrl_c().await; };
//! gator_web::serve(listener, app, ServeLimits::default(), stop).await?;
//! # Ok(()) }
//! ```
//!
//! The pages (`/`, `queues`, `busy`, `scheduled`, `retries`, `dead`, `job`, `flows`, `cron`,
//! `limits`, `search`) are plain HTML with one shared stylesheet and a small script each,
//! embedded in the binary; they fetch the JSON API (`api/...`) every two seconds while the tab
//! is visible. Every link and fetch is relative, so they work under any prefix.
//!
//! # Safety
//!
//! The guard in front of every route is in [`auth`]; [`WebConfig`] says what it enforces, and
//! [`WebConfig::validate`] what a sound configuration is ([`router`] panics on an unsound one,
//! [`try_router`] returns why).
//!
//! - **DNS rebinding.** Without auth, or once [`WebConfig::allowed_hosts`] is given, only
//!   requests addressed to `localhost`, `127.0.0.1`, `[::1]`, the bound address or an allowed
//!   host are answered; else 421 `host_not_allowed`.
//! - **Another site.** `Sec-Fetch-Site: cross-site` is refused on every request (403
//!   `cross_site`, the same answer whether its credentials were right or wrong) unless it
//!   carries `Authorization: Bearer`; every POST from a browser needs the page's CSRF token. A
//!   read-only mode refuses every POST.
//! - **Guessing.** Tokens and passwords have at least [`MIN_SECRET_CHARS`] characters, of which
//!   [`MIN_SECRET_DISTINCT_CHARS`] different, and are not repetitive ([`WebConfig::validate`]).
//!   Every wrong one counts, whatever else refuses the request, and failed logins are throttled
//!   per client address ([`AuthThrottle`]): past a burst, 429 with `Retry-After`, credentials
//!   unchecked. The peer address comes from axum's `ConnectInfo<SocketAddr>`, which [`serve`]
//!   sets; without it every client shares one bucket.
//! - **Sessions.** A `?token=` login sets an HMAC session cookie with an expiry, not the token:
//!   `HttpOnly`, `SameSite=Strict`, `Max-Age`, `Secure` over HTTPS. A new token or a restart
//!   ends every session.
//! - **Bounded requests**, as layers of the router, so a mounted router keeps them: a body over
//!   [`WebConfig::max_body_bytes`] is answered 413 `payload_too_large` from its
//!   `Content-Length`, before it is read; a body slower than [`WebConfig::body_timeout`] 408
//!   `request_timeout` (the body timeout is the shorter); a request slower than
//!   [`WebConfig::request_timeout`] 503 `timeout`.
//!   Every answer carries `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`,
//!   and `Cache-Control: no-store` unless it says otherwise.
//! - **Bounded connections**, in [`serve`]: a header read timeout that also ends idle
//!   keep-alive connections; a cap on open connections, in all and per client address; a
//!   write timeout and a bounded send buffer for clients that do not read their answers; a cap
//!   on pipelined requests ([`ServeLimits`]).
//!
//! Errors are JSON `{"error": "...", "code": "..."}` ([`ApiError`]); Redis being away is a
//! 503, never a crash.

// A published crate: every public item is documented (the workspace only warns).
#![deny(missing_docs)]

mod api;
mod app;
pub mod auth;
mod config;
mod error;
mod host;
mod layers;
mod pages;
mod secret;
mod serve;
mod session;
pub mod throttle;

pub use config::{
    BasicAuth, ConfigError, DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_SESSION_TTL, MAX_ALLOWED_HOSTS, MAX_SECRET_BYTES, MAX_SESSION_TTL, MIN_SECRET_CHARS,
    MIN_SECRET_DISTINCT_CHARS, WebConfig,
};
pub use error::ApiError;
pub use serve::{ServeLimits, serve};
pub use throttle::AuthThrottle;

use app::App;
use axum::Router;
use gator_core::Client;
use host::Hosts;
use session::Sessions;
use std::sync::Arc;
use throttle::Throttle;

/// The dashboard and the API for the Gator data `client` reads, guarded as `config` says, or
/// why `config` is unsound ([`WebConfig::validate`]).
/// Mount it anywhere: `Router::nest("/gator", try_router(client, config)?)`.
pub fn try_router(client: Client, config: WebConfig) -> Result<Router, ConfigError> {
    config.validate()?;
    let hosts = Hosts::new(config.host_patterns()?, config.bound_address);
    let sessions = config.auth_token.as_deref().map(|token| {
        Arc::new(Sessions::new(
            token,
            config.session_ttl,
            config.secure_cookies,
        ))
    });
    let app = App {
        admin: gator_core::Admin::new(client.clone()),
        client,
        throttle: Arc::new(Throttle::new(config.auth_throttle)),
        config: Arc::new(config.clone()),
        csrf: new_csrf_token().into(),
        hosts: Arc::new(hosts),
        sessions,
    };
    let routes = Router::new()
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
        .with_state(app);
    Ok(layers::shield(routes, &config))
}

/// The dashboard and the API for the Gator data `client` reads, guarded as `config` says.
/// Mount it anywhere: `Router::nest("/gator", router(client, config))`.
///
/// # Panics
///
/// If `config` does not validate ([`WebConfig::validate`]): a weak token or basic-auth
/// password (shorter than [`MIN_SECRET_CHARS`] characters, blank, or repetitive), a malformed
/// allowed host, a limit of zero, a body timeout not shorter than the request timeout. Use
/// [`try_router`] to get the error instead.
pub fn router(client: Client, config: WebConfig) -> Router {
    match try_router(client, config) {
        Ok(router) => router,
        Err(error) => panic!("gator_web::router: {error}"),
    }
}

/// 32 random bytes, hex: unguessable by another site.
fn new_csrf_token() -> String {
    rand::random::<[u8; 32]>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
