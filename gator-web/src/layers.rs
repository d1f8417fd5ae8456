//! The layers every request and answer of the router goes through, outermost first, so a
//! router mounted in another app keeps them too:
//!
//! 1. **Headers.** `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer` (a
//!    `?token=` login must not leak through `Referer`) on every answer; `Cache-Control:
//!    no-store` on every answer that does not say otherwise (the API's, errors), so no shared
//!    cache keeps what an authenticated request saw.
//! 2. **JSON errors.** What the tower-http layers below answer themselves (413, 503) gets
//!    the API's JSON body, `{"error": "...", "code": "..."}`.
//! 3. **Request timeout.** A request not answered within [`WebConfig::request_timeout`] is
//!    answered 503 `timeout` (a slow Redis, say), and its handler dropped.
//! 4. **Body limit.** A `Content-Length` above [`WebConfig::max_body_bytes`] is answered 413
//!    `payload_too_large` at once, before any of the body is read; a chunked body is cut off
//!    at the limit, with the same answer.
//! 5. **Body deadline.** A body not all arrived within [`WebConfig::body_timeout`] of the head
//!    is cut off: 408 `request_timeout`, however often a byte trickles in. Both deadlines start
//!    with the request, so the body's must be the shorter ([`WebConfig::validate`] says so),
//!    or step 3 would answer a slow body 503 first.
//!
//! The connection itself (header read and write timeouts, idle keep-alive, the caps on
//! connections and pipelined requests) is the server's: see [`crate::serve`].

use crate::config::WebConfig;
use crate::error::ApiError;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::{RequestBodyDeadlineLayer, TimeoutLayer};

/// `router` with steps 1 to 5 of the module docs (innermost first, as axum stacks them).
pub(crate) fn shield(router: Router, config: &WebConfig) -> Router {
    router
        .layer(RequestBodyDeadlineLayer::new(config.body_timeout))
        // axum's own limit for the extractors, which would otherwise cap bodies at 2 MB.
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(RequestBodyLimitLayer::new(config.max_body_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            config.request_timeout,
        ))
        .layer(axum::middleware::map_response(json_errors))
        .layer(SetResponseHeaderLayer::if_not_present(
            CACHE_CONTROL,
            HeaderValue::from_static("no-store"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
}

/// Step 2: an error answer a layer made without a JSON body gets one.
async fn json_errors(response: Response) -> Response {
    let json = response
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if json {
        return response;
    }
    match response.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::payload_too_large().into_response(),
        StatusCode::SERVICE_UNAVAILABLE => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            "the request took too long and was given up: try again, or narrow it",
        )
        .into_response(),
        _ => response,
    }
}
