//! `GET /api/scaling`: the autoscaling signal of every known queue
//! ([`gator_core::admin::scaling`]), in the shape KEDA's `metrics-api` scaler reads
//! (`valueLocation: queues.<queue>.suggested_workers`).

use crate::app::App;
use crate::error::{ApiError, ApiResult, Params};
use axum::Json;
use axum::extract::State;
use gator_core::admin::scaling::{DEFAULT_MAX_WORKERS, DEFAULT_TARGET_LATENCY};
use gator_core::admin::{Scaling, ScalingPolicy};
use serde::Deserialize;

/// `?target_latency=30s&max_workers=100`, both optional.
#[derive(Debug, Deserialize)]
pub(crate) struct ScalingParams {
    target_latency: Option<String>,
    max_workers: Option<u32>,
}

pub(crate) async fn scaling(
    State(app): State<App>,
    Params(p): Params<ScalingParams>,
) -> ApiResult<Scaling> {
    let target = match p.target_latency.as_deref() {
        None => DEFAULT_TARGET_LATENCY,
        Some(text) => humantime::parse_duration(text).map_err(|e| {
            ApiError::bad_request(format!("target_latency {text:?} is not a duration: {e}"))
        })?,
    };
    let policy = ScalingPolicy::new(target, p.max_workers.unwrap_or(DEFAULT_MAX_WORKERS))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(Json(app.admin.scaling(policy).await?))
}
