//! The POST side of the API: retry, delete, pause, resume, clear, cancel, reply, run a
//! periodic job now. Each is one call into gator-core; the guard (`crate::auth`) has already
//! checked auth, read-only and CSRF.

use super::find::set_kind;
use super::views::StatusView;
use crate::app::App;
use crate::error::{ApiError, ApiResult, Body, Segments};
use axum::Json;
use axum::extract::State;
use gator_core::admin::{BulkAction, MAX_BULK};
use gator_core::cancel::Cancellation;
use gator_core::reply::Delivery;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Which entries of a set a bulk action takes: listed jids, or all of them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Selection {
    /// The jids to act on: the first `MAX_BULK` of them this request, the rest handed back.
    #[serde(default)]
    jids: Vec<String>,
    /// Act on every entry of the set (of `queue`, if given), `MAX_BULK` a request.
    #[serde(default)]
    all: bool,
    /// With `all`: where this request goes on (the `next_cursor` of the one before).
    cursor: Option<String>,
    /// Only this queue's set.
    queue: Option<String>,
}

/// What a bulk request did, and what is left for the next one: a request acts on at most
/// `max_per_request` entries, whatever the sets hold.
#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    /// How many entries it moved or deleted.
    done: usize,
    /// The jids it looked for and did not find (or, to retry, found not runnable).
    missing: Vec<String>,
    /// The jids given past `max_per_request`, not looked at: send them again.
    remaining: Vec<String>,
    /// With `all`: where the next request goes on (`"cursor"`); `null` once every entry was
    /// seen.
    next_cursor: Option<String>,
    /// The most jids, or entries of `all`, one request takes.
    max_per_request: usize,
}

pub(crate) async fn retry_selected(
    State(app): State<App>,
    Segments(set): Segments<String>,
    Body(selection): Body<Selection>,
) -> ApiResult<Outcome> {
    on_selection(&app, &set, selection, BulkAction::Run).await
}

pub(crate) async fn delete_selected(
    State(app): State<App>,
    Segments(set): Segments<String>,
    Body(selection): Body<Selection>,
) -> ApiResult<Outcome> {
    on_selection(&app, &set, selection, BulkAction::Delete).await
}

async fn on_selection(
    app: &App,
    set: &str,
    mut selection: Selection,
    action: BulkAction,
) -> ApiResult<Outcome> {
    let kind = set_kind(set)?;
    let queue = selection.queue.as_deref().filter(|q| !q.is_empty());
    if selection.all != selection.jids.is_empty() {
        return Err(ApiError::bad_request(
            "give either \"jids\": [...] or \"all\": true",
        ));
    }
    let cursor = selection.cursor.as_deref().filter(|c| !c.is_empty());
    if cursor.is_some() && !selection.all {
        return Err(ApiError::bad_request("\"cursor\" goes with \"all\": true"));
    }
    let remaining = if selection.all {
        Vec::new()
    } else {
        let cut = selection.jids.len().min(MAX_BULK);
        selection.jids.split_off(cut)
    };
    let bulk = if selection.all {
        app.admin.act_on_all(action, kind, queue, cursor).await?
    } else {
        (app.admin)
            .act_on_jids(action, kind, queue, &selection.jids)
            .await?
    };
    Ok(Json(Outcome {
        done: bulk.done,
        missing: bulk.missing,
        remaining,
        next_cursor: bulk.next_cursor,
        max_per_request: MAX_BULK,
    }))
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
    gator_core::admin::validate_stored_queue(queue)?;
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
