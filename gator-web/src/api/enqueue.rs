//! `POST /api/queues/{queue}/jobs` and `POST /api/jobs`: dispatch by wire name, for producers
//! not written in Rust. The job catalogue gives the job its queue (for `/api/jobs`), its flow
//! and unique options, and checks its arguments; a name no worker published is refused (422,
//! with the known names) unless the body says `"force": true`. The body's shape is checked here
//! (unknown fields, args not an array, a bad time are 400s); the names and keys by gator-core,
//! by the one rule of gator-rules (`visible_name`): a 400 that names the field (`invalid job
//! name`, `fair key`).

use crate::app::App;
use crate::error::{ApiError, Body, Segments};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The request body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Enqueue {
    /// The job's wire name (what `#[job]` registered).
    job: String,
    /// Its arguments, one per parameter of the job fn.
    #[serde(default = "no_args")]
    args: Value,
    /// When to run it: ms since the epoch, or an RFC 3339 time.
    at: Option<Value>,
    /// Or after how long: `30s`, `5m`, `1h 30m`.
    #[serde(rename = "in")]
    delay: Option<String>,
    /// Expire it if it has not started this long after now, on Redis's clock: `10m`.
    expires_in: Option<String>,
    /// With `expires_in`: `drop` to not keep it once expired, `dead` (the default) to keep it
    /// in the dead set.
    on_expire: Option<String>,
    /// The fair key (1 to 128 bytes), instead of the one the job takes from an argument.
    fair_key: Option<String>,
    /// For `POST /api/jobs`: the queue, instead of the one the catalogue names.
    queue: Option<String>,
    /// Store it even if no worker published the name in the catalogue.
    #[serde(default)]
    force: bool,
}

fn no_args() -> Value {
    Value::Array(Vec::new())
}

/// `POST /api/queues/{queue}/jobs`: on that queue.
pub(crate) async fn enqueue(
    State(app): State<App>,
    Segments(queue): Segments<String>,
    Body(body): Body<Enqueue>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    gator_core::admin::validate_queue(&queue)?;
    if body.queue.as_ref().is_some_and(|q| *q != queue) {
        return Err(ApiError::bad_request(
            "\"queue\" names another queue than the path: give one",
        ));
    }
    dispatch(&app, Some(queue), body).await
}

/// `POST /api/jobs`: on the queue the body or the catalogue names.
pub(crate) async fn enqueue_by_name(
    State(app): State<App>,
    Body(body): Body<Enqueue>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let queue = body.queue.clone();
    dispatch(&app, queue, body).await
}

async fn dispatch(
    app: &App,
    queue: Option<String>,
    body: Enqueue,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if !body.args.is_array() {
        return Err(ApiError::bad_request(
            "\"args\" must be an array, one element per argument of the job",
        ));
    }
    let mut by_name = app.client.dispatch_by_name(&body.job, body.args);
    if let Some(queue) = &queue {
        by_name = by_name.queue(queue);
    }
    if body.force {
        by_name = by_name.force();
    }
    if let Some(fair) = body.fair_key {
        by_name = by_name.fair_key(fair);
    }
    by_name = match (body.at, body.delay) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request("give \"at\" or \"in\", not both"));
        }
        (Some(at), None) => by_name.at(parse_at(&at)?)?,
        (None, Some(delay)) => {
            let delay = humantime::parse_duration(&delay).map_err(|e| {
                ApiError::bad_request(format!(
                    "invalid \"in\" {delay:?}: {e} (e.g. \"30s\", \"5m\")"
                ))
            })?;
            by_name.after(delay)?
        }
        (None, None) => by_name,
    };
    by_name = with_expiry(
        by_name,
        body.expires_in.as_deref(),
        body.on_expire.as_deref(),
    )?;
    let dispatched = by_name.dispatch().await?;
    let duplicate = dispatched.is_duplicate();
    Ok((
        StatusCode::CREATED,
        Json(json!({ "jid": dispatched.into_jid(), "duplicate": duplicate })),
    ))
}

/// `expires_in` (Gator's duration notation) and `on_expire` (`dead` or `drop`): a zero,
/// negative, unparsable or too long time to live, or an `on_expire` without one, is a 400.
fn with_expiry<'c>(
    by_name: gator_core::client::ByName<'c>,
    expires_in: Option<&str>,
    on_expire: Option<&str>,
) -> Result<gator_core::client::ByName<'c>, ApiError> {
    let Some(text) = expires_in else {
        return match on_expire {
            Some(_) => Err(ApiError::bad_request(
                "\"on_expire\" needs \"expires_in\": give both, or neither",
            )),
            None => Ok(by_name),
        };
    };
    let ttl = gator_core::expiry::parse_delay(text)?;
    let mut by_name = by_name.expires_in(ttl)?;
    if let Some(on_expire) = on_expire {
        by_name = by_name.on_expire(gator_core::expiry::OnExpire::parse(on_expire)?);
    }
    Ok(by_name)
}

/// `at`: ms since the epoch, or an RFC 3339 time such as `2026-12-01T09:00:00Z`.
fn parse_at(at: &Value) -> Result<SystemTime, ApiError> {
    let bad = || {
        ApiError::bad_request(format!(
            "invalid \"at\" {at}: give ms since the epoch or an RFC 3339 time (2026-12-01T09:00:00Z)"
        ))
    };
    match at {
        Value::Number(n) => n
            .as_u64()
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms))
            .ok_or_else(bad),
        Value::String(text) => {
            let ts: jiff::Timestamp = text.parse().map_err(|_| bad())?;
            Ok(SystemTime::from(ts))
        }
        _ => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_is_epoch_ms_or_rfc3339() {
        let ms = UNIX_EPOCH + Duration::from_millis(1_764_579_600_000);
        assert_eq!(parse_at(&json!(1_764_579_600_000u64)), Ok(ms));
        assert_eq!(parse_at(&json!("2025-12-01T09:00:00Z")), Ok(ms));
        assert_eq!(parse_at(&json!("2025-12-01T10:00:00+01:00")), Ok(ms));
        assert!(parse_at(&json!("tomorrow")).is_err());
        assert!(parse_at(&json!(-5)).is_err());
        assert!(parse_at(&json!([1])).is_err());
    }
}
