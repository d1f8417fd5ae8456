//! The POST side of the API: retry, delete, pause, resume, clear, cancel, reply, run a
//! periodic job now. Each is one call into gator-core; the guard (`crate::auth`) has already
//! checked auth, read-only and CSRF.

use super::find::set_kind;
use super::views::StatusView;
use crate::App;
use crate::error::{ApiError, ApiResult, Body, Segments};
use axum::Json;
use axum::extract::State;
use gator_core::cancel::Cancellation;
use gator_core::reply::Delivery;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Which entries of a set a bulk action takes: listed jids, or all of them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Selection {
    /// The jids to act on.
    #[serde(default)]
    jids: Vec<String>,
    /// Act on every entry of the set (of `queue`, if given).
    #[serde(default)]
    all: bool,
    /// Only this queue's set (also makes finding each jid cheaper).
    queue: Option<String>,
}

/// How many entries an action moved or deleted, and the jids it did not find.
#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    done: usize,
    missing: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
enum SetAction {
    Retry,
    Delete,
}

pub(crate) async fn retry_selected(
    State(app): State<App>,
    Segments(set): Segments<String>,
    Body(selection): Body<Selection>,
) -> ApiResult<Outcome> {
    on_selection(&app, &set, selection, SetAction::Retry).await
}

pub(crate) async fn delete_selected(
    State(app): State<App>,
    Segments(set): Segments<String>,
    Body(selection): Body<Selection>,
) -> ApiResult<Outcome> {
    on_selection(&app, &set, selection, SetAction::Delete).await
}

async fn on_selection(
    app: &App,
    set: &str,
    selection: Selection,
    action: SetAction,
) -> ApiResult<Outcome> {
    let kind = set_kind(set)?;
    let queue = selection.queue.as_deref().filter(|q| !q.is_empty());
    if selection.all != selection.jids.is_empty() {
        return Err(ApiError::bad_request(
            "give either \"jids\": [...] or \"all\": true",
        ));
    }
    if selection.all {
        let done = match action {
            SetAction::Retry => app.admin.run_all_now(kind, queue).await?,
            SetAction::Delete => app.admin.clear_set(kind, queue).await?,
        };
        return Ok(Json(Outcome {
            done,
            missing: Vec::new(),
        }));
    }
    let mut outcome = Outcome {
        done: 0,
        missing: Vec::new(),
    };
    for jid in selection.jids {
        let acted = match action {
            SetAction::Retry => app.admin.run_now(kind, queue, &jid).await?,
            SetAction::Delete => app.admin.delete_job(kind, queue, &jid).await?,
        };
        if acted {
            outcome.done += 1;
        } else {
            outcome.missing.push(jid);
        }
    }
    Ok(Json(outcome))
}

pub(crate) async fn retry_one(
    State(app): State<App>,
    Segments((set, jid)): Segments<(String, String)>,
) -> ApiResult<Value> {
    let kind = set_kind(&set)?;
    if app.admin.run_now(kind, None, &jid).await? {
        Ok(Json(json!({ "jid": jid, "retried": true })))
    } else {
        Err(ApiError::not_found(format!(
            "no runnable job {jid} in the {kind} set"
        )))
    }
}

pub(crate) async fn delete_one(
    State(app): State<App>,
    Segments((set, jid)): Segments<(String, String)>,
) -> ApiResult<Value> {
    let kind = set_kind(&set)?;
    if app.admin.delete_job(kind, None, &jid).await? {
        Ok(Json(json!({ "jid": jid, "deleted": true })))
    } else {
        Err(ApiError::not_found(format!(
            "no job {jid} in the {kind} set"
        )))
    }
}

/// Checks a queue from the path and that it is known: acting on a mistyped name would create
/// state nobody looks at.
async fn known_queue(app: &App, queue: &str) -> Result<(), ApiError> {
    gator_core::store::keys::validate_stored_queue(queue)?;
    if app.admin.known_queues().await?.iter().any(|q| q == queue) {
        Ok(())
    } else {
        Err(ApiError::not_found(format!("no queue {queue:?}")))
    }
}

pub(crate) async fn pause_queue(
    State(app): State<App>,
    Segments(queue): Segments<String>,
) -> ApiResult<Value> {
    known_queue(&app, &queue).await?;
    app.admin.pause_queue(&queue).await?;
    Ok(Json(json!({ "queue": queue, "paused": true })))
}

pub(crate) async fn resume_queue(
    State(app): State<App>,
    Segments(queue): Segments<String>,
) -> ApiResult<Value> {
    known_queue(&app, &queue).await?;
    app.admin.resume_queue(&queue).await?;
    Ok(Json(json!({ "queue": queue, "paused": false })))
}

pub(crate) async fn clear_queue(
    State(app): State<App>,
    Segments(queue): Segments<String>,
) -> ApiResult<Value> {
    known_queue(&app, &queue).await?;
    let deleted = app.admin.clear_queue(&queue).await?;
    Ok(Json(json!({ "queue": queue, "deleted": deleted })))
}

pub(crate) async fn cancel_job(
    State(app): State<App>,
    Segments(jid): Segments<String>,
) -> ApiResult<Value> {
    let answer = match app.client.cancel(&jid).await? {
        Cancellation::Removed => json!({ "jid": jid, "cancelled": "removed" }),
        Cancellation::Stopping => json!({ "jid": jid, "cancelled": "stopping" }),
        Cancellation::Finished(status) => {
            return Err(ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "conflict",
                format!(
                    "job {jid} has already finished ({})",
                    StatusView::from(&status).state
                ),
            ));
        }
        Cancellation::Unknown => return Err(ApiError::not_found(format!("no job {jid}"))),
    };
    Ok(Json(answer))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Reply {
    key: String,
    value: Value,
}

pub(crate) async fn reply(State(app): State<App>, Body(reply): Body<Reply>) -> ApiResult<Value> {
    let delivery = match app.client.reply(&reply.key, &reply.value).await? {
        Delivery::Delivered => "delivered",
        Delivery::Kept => "kept",
        Delivery::Duplicate => "duplicate",
    };
    Ok(Json(json!({ "key": reply.key, "delivery": delivery })))
}

pub(crate) async fn pause_cron(
    State(app): State<App>,
    Segments(name): Segments<String>,
) -> ApiResult<Value> {
    app.admin.pause_periodic(&name).await?;
    Ok(Json(json!({ "name": name, "paused": true })))
}

pub(crate) async fn resume_cron(
    State(app): State<App>,
    Segments(name): Segments<String>,
) -> ApiResult<Value> {
    app.admin.resume_periodic(&name).await?;
    Ok(Json(json!({ "name": name, "paused": false })))
}

pub(crate) async fn run_cron(
    State(app): State<App>,
    Segments(name): Segments<String>,
) -> ApiResult<Value> {
    let jid = app.admin.run_periodic_now(&name).await?;
    Ok(Json(json!({ "name": name, "jid": jid })))
}
