//! `GET /api/outbox`: the transactional outbox as its relays last reported it in Redis (rows
//! waiting for a relay, dead rows, the lag, rows per second), read through
//! [`gator_core::Admin::outbox_reports`]: the dashboard needs no database connection. Empty
//! `relays` when none reported in the last minute (no worker runs with `--outbox`).

use crate::app::App;
use crate::error::ApiResult;
use axum::Json;
use axum::extract::State;
use gator_core::outbox::Report;
use serde::Serialize;

/// The relays' reports, with Redis's clock for "reported 3 s ago".
#[derive(Debug, Serialize)]
pub(crate) struct OutboxView {
    now_ms: u64,
    relays: Vec<Report>,
}

pub(crate) async fn outbox(State(app): State<App>) -> ApiResult<OutboxView> {
    let relays = app.admin.outbox_reports().await?;
    Ok(Json(OutboxView {
        now_ms: app.client.redis_time().await?,
        relays,
    }))
}
