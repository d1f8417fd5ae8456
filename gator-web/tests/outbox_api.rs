//! The transactional outbox on the dashboard: `GET /api/outbox` serves what each relay last
//! reported in Redis (published here with `gator_core::outbox::publish`, as a worker's relay
//! does), none when no relay reported, text from Redis as it was stored; and the overview page
//! has the panel its script fills (shown only when a relay reported).
#![allow(clippy::unwrap_used)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use gator_core::outbox::{Report, publish};
use gator_tests::{RedisServer, client};
use gator_web::{WebConfig, router};
use serde_json::Value;
use tower::ServiceExt;

const TOKEN: &str = "t0ken-for-the-tests";

async fn get(app: &Router, path: &str) -> Value {
    let request = Request::builder()
        .uri(path)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "GET {path}");
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
}

#[tokio::test]
async fn the_api_serves_each_relays_last_report_and_the_overview_has_its_panel() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let app = router(client.clone(), WebConfig::new().auth_token(TOKEN));
    let none = get(&app, "/api/outbox").await;
    assert_eq!(none["relays"], Value::Array(Vec::new()), "{none}");

    let hostile = "vm:42:<b>x</b>\u{202e}";
    for (relay, waiting, dead) in [("vm:7:a1b2c3", 12, 1), (hostile, 3, 0)] {
        let report = Report {
            relay: relay.to_owned(),
            waiting,
            dead,
            lag_ms: 1_500,
            rows_per_second: 250.5,
            relayed: 4_000,
            ..Report::default()
        };
        publish(&client, report).await.unwrap();
    }
    let served = get(&app, "/api/outbox").await;
    let relays = served["relays"].as_array().unwrap();
    assert_eq!(relays.len(), 2, "{served}");
    let first = relays.iter().find(|r| r["relay"] == "vm:7:a1b2c3").unwrap();
    assert_eq!(
        (&first["waiting"], &first["dead"], &first["lag_ms"]),
        (&Value::from(12), &Value::from(1), &Value::from(1_500)),
        "{served}"
    );
    assert_eq!(first["rows_per_second"], 250.5);
    assert_eq!(first["relayed"], 4_000);
    let now = served["now_ms"].as_u64().unwrap();
    let at = first["at_ms"].as_u64().unwrap();
    assert!(at > 0 && at <= now, "stamped on Redis's clock: {served}");
    assert!(
        relays.iter().any(|r| r["relay"] == hostile),
        "a relay id is served as it was stored, for the page to set as text: {served}"
    );

    let page = get(&app, "/").await;
    let page = page.as_str().unwrap();
    assert!(page.contains("id=\"outbox-panel\" hidden"), "{page}");
    let script = get(&app, "/assets/overview.js").await;
    let script = script.as_str().unwrap();
    assert!(
        script.contains("api/outbox"),
        "the overview asks for the outbox"
    );
    assert!(
        !script.contains("innerHTML"),
        "the overview sets text, never markup"
    );
}
