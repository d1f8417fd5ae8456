//! `GET /api/search`: the bounded search of gator-core (`gator_core::admin::search`), its
//! query read from the URL.

use super::find::MAX_PAGE;
use crate::app::App;
use crate::error::{ApiError, ApiResult, Params};
use axum::Json;
use axum::extract::State;
use gator_core::admin::{DEFAULT_BUDGET, Place, SearchField, SearchPage, SearchQuery};
use serde::Deserialize;
use std::str::FromStr;

/// The most a caller may raise the budget to.
pub(crate) const MAX_BUDGET: usize = 100_000;

#[derive(Debug, Deserialize)]
pub(crate) struct SearchParams {
    /// The text to find.
    q: String,
    /// `any` (default), `jid`, `job`, `args` or `error`.
    field: Option<String>,
    /// Comma-separated places: `queued,scheduled,retry,dead` (default: all).
    places: Option<String>,
    queue: Option<String>,
    cursor: Option<String>,
    limit: Option<usize>,
    budget: Option<usize>,
}

pub(crate) async fn search(
    State(app): State<App>,
    Params(p): Params<SearchParams>,
) -> ApiResult<SearchPage> {
    if p.q.is_empty() {
        return Err(ApiError::bad_request("give the text to search for: ?q=..."));
    }
    let field = match p.field.as_deref().filter(|f| !f.is_empty()) {
        None => SearchField::Any,
        Some(f) => SearchField::from_str(f).map_err(|_| {
            ApiError::bad_request(format!(
                "unknown field {f:?}: use any, jid, job, args or error"
            ))
        })?,
    };
    let mut places = Vec::new();
    for name in p
        .places
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
    {
        let place = match name {
            "retries" => Place::Retry,
            other => Place::from_str(other).map_err(|_| {
                ApiError::bad_request(format!(
                    "unknown place {other:?}: use queued, scheduled, retry or dead"
                ))
            })?,
        };
        places.push(place);
    }
    let queue = p.queue.filter(|q| !q.is_empty());
    if let Some(queue) = &queue {
        gator_core::admin::validate_stored_queue(queue)?;
    }
    let query = SearchQuery {
        text: p.q,
        field,
        places,
        queue,
        cursor: p.cursor.filter(|c| !c.is_empty()),
        limit: p.limit.unwrap_or(50).clamp(1, MAX_PAGE),
        budget: p.budget.unwrap_or(DEFAULT_BUDGET).clamp(1, MAX_BUDGET),
    };
    Ok(Json(app.admin.search(&query).await?))
}
