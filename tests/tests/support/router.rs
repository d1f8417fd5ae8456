//! One request to the dashboard's router, as the expiring-job tests send it: included by path
//! (`#[path = "support/router.rs"] mod router;`) where a test drives the HTTP API in process.

use serde_json::Value;

/// The token the tests' routers are built with.
pub const TOKEN: &str = "t0ken-for-the-expiring-tests";

/// `method path` with `body` as JSON (if any), authorized by [`TOKEN`]: the answer's status and
/// its JSON body (or the text, as a JSON string, if it is not JSON).
pub async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    use tower::ServiceExt;
    let mut request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {TOKEN}"));
    let body = match body {
        Some(json) => {
            request = request.header("content-type", "application/json");
            axum::body::Body::from(json.to_string())
        }
        None => axum::body::Body::empty(),
    };
    let response = app
        .clone()
        .oneshot(request.body(body).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 10 << 20)
        .await
        .unwrap();
    let json = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, json)
}
