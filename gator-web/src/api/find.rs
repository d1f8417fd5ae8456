//! The GET side of the API that looks for jobs in a set: a set's pages (filtered through the
//! bounded search). One job by its jid is in `job`, search itself in `search`.

use super::views::EntryView;
use crate::app::App;
use crate::error::{ApiError, ApiResult, Params, Segments};
use axum::Json;
use axum::extract::State;
use gator_core::admin::{DEFAULT_BUDGET, Place, SearchField, SearchHit, SearchQuery};
use gator_core::{SetEntry, SetKind};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// The most entries one page of a set, or of search hits, may ask for.
pub(crate) const MAX_PAGE: usize = 500;

/// `scheduled`, `retry` (or `retries`) or `dead`.
pub(crate) fn set_kind(name: &str) -> Result<SetKind, ApiError> {
    match name {
        "retries" => Ok(SetKind::Retry),
        other => SetKind::from_str(other).map_err(ApiError::bad_request),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct SetParams {
    /// 1-based page (unfiltered listing): any depth on one queue; over several queues merged,
    /// at most `MAX_MERGED_DEPTH` entries deep (use `cursor` beyond).
    page: Option<u64>,
    per_page: Option<usize>,
    /// Filters: a queue, a job's wire name, a substring of the error.
    queue: Option<String>,
    job: Option<String>,
    error: Option<String>,
    /// Where the page starts: the `next_cursor` of the page before.
    cursor: Option<String>,
}

/// A page of a set: by cursor (or a page number) when unfiltered, through the bounded search
/// when filtered. Either way it reads a bounded number of entries, whatever page is asked.
#[derive(Debug, Serialize)]
pub(crate) struct SetPage {
    set: &'static str,
    /// Entries in the set (of the queue, if filtered by queue); with a job or error filter,
    /// the entries that match (counted over at most `count_budget` entries: exact when
    /// `total_exact`, else how many matched among the first ones).
    total: usize,
    /// Whether `total` is exact: always without a filter; with one, when the set was
    /// counted whole within `count_budget` entries.
    total_exact: bool,
    /// Entries in the set (of the queue, if filtered by queue), whatever the filter.
    set_size: usize,
    /// The page number asked for (1 when paging by cursor).
    page: u64,
    per_page: usize,
    entries: Vec<EntryView>,
    /// Where the next page starts, `None` at the end.
    next_cursor: Option<String>,
    /// With a job or error filter: how many entries this page examined.
    scanned: Option<usize>,
    /// What one request reads at most, so a caller knows how to page deeper.
    bounds: Bounds,
}

/// The bounds of a set listing, said in every answer.
#[derive(Debug, Serialize)]
pub(crate) struct Bounds {
    /// The largest `per_page`.
    max_per_page: usize,
    /// How deep `page` reaches over several queues merged; `cursor` reaches any depth.
    max_merged_depth: usize,
    /// Entries of each queue one unfiltered request reads at most (`per_page`).
    read_per_queue: usize,
    /// Entries one filtered request examines at most.
    filter_budget: usize,
    /// Entries a filtered request counts its matches over at most.
    count_budget: usize,
}

/// The most entries a filtered request counts its matches over: a second bounded read,
/// beside the page's, so that `total` says how many match.
const COUNT_BUDGET: usize = 10_000;

pub(crate) async fn set(
    State(app): State<App>,
    Segments(name): Segments<String>,
    Params(p): Params<SetParams>,
) -> ApiResult<SetPage> {
    let kind = set_kind(&name)?;
    let queue = p.queue.as_deref().filter(|q| !q.is_empty());
    let per_page = p.per_page.unwrap_or(25).clamp(1, MAX_PAGE);
    let page = p.page.unwrap_or(1).max(1);
    let total = app.admin.set_len(kind, queue).await?;
    let job = p.job.filter(|j| !j.is_empty());
    let error = p.error.filter(|e| !e.is_empty());
    let mut answer = SetPage {
        set: kind.as_str(),
        total,
        total_exact: true,
        set_size: total,
        page,
        per_page,
        entries: Vec::new(),
        next_cursor: None,
        scanned: None,
        bounds: Bounds {
            max_per_page: MAX_PAGE,
            max_merged_depth: gator_core::admin::MAX_MERGED_DEPTH,
            read_per_queue: per_page,
            filter_budget: DEFAULT_BUDGET,
            count_budget: COUNT_BUDGET,
        },
    };
    if job.is_none() && error.is_none() {
        let cursor = p.cursor.filter(|c| !c.is_empty());
        if cursor.is_none() && page > 1 {
            // By page number: an offset, in saturating arithmetic (page=u64::MAX is no panic).
            let offset =
                usize::try_from((page - 1).saturating_mul(per_page as u64)).unwrap_or(usize::MAX);
            let entries = app.admin.list_set(kind, queue, offset, per_page).await?;
            answer.entries = views(&app, kind, &entries).await?;
            return Ok(Json(answer));
        }
        let found = (app.admin)
            .set_page(kind, queue, cursor.as_deref(), per_page)
            .await?;
        answer.entries = views(&app, kind, &found.entries).await?;
        answer.next_cursor = found.next_cursor;
        return Ok(Json(answer));
    }
    filtered(&app, kind, queue, (job, error), p.cursor, answer).await
}

/// A set's page with a job or error filter: the bounded search of gator-core, on the error
/// text if given (the rarer match), and the job name checked here on the hits.
async fn filtered(
    app: &App,
    kind: SetKind,
    queue: Option<&str>,
    (job, error): (Option<String>, Option<String>),
    cursor: Option<String>,
    mut answer: SetPage,
) -> ApiResult<SetPage> {
    let (text, field) = match (&error, &job) {
        (Some(error), _) => (error.clone(), SearchField::Error),
        (None, Some(job)) => (job.clone(), SearchField::Job),
        (None, None) => return Err(ApiError::bad_request("a filter needs job or error")),
    };
    let query = |cursor, limit, budget| SearchQuery {
        text: text.clone(),
        field,
        places: vec![place_of(kind)],
        queue: queue.map(str::to_owned),
        cursor,
        limit,
        budget,
    };
    let matches = |hit: &&SearchHit| job.as_ref().is_none_or(|job| &hit.job == job);
    let found = (app.admin)
        .search(&query(cursor, answer.per_page, DEFAULT_BUDGET))
        .await?;
    let entries: Vec<_> = found
        .hits
        .iter()
        .filter(matches)
        .map(|hit| entry_of_hit(kind, hit))
        .collect();
    answer.entries = views(app, kind, &entries).await?;
    let counted = (app.admin)
        .search(&query(None, COUNT_BUDGET, COUNT_BUDGET))
        .await?;
    answer.total = counted.hits.iter().filter(matches).count();
    answer.total_exact = counted.next_cursor.is_none();
    answer.next_cursor = found.next_cursor;
    answer.scanned = Some(found.scanned);
    Ok(Json(answer))
}

fn place_of(kind: SetKind) -> Place {
    match kind {
        SetKind::Scheduled => Place::Scheduled,
        SetKind::Retry => Place::Retry,
        SetKind::Dead => Place::Dead,
    }
}

/// `entries` of the `kind` set as shown: in the scheduled set, a suspended durable job with
/// its reason (the other sets hold none).
async fn views(app: &App, kind: SetKind, entries: &[SetEntry]) -> Result<Vec<EntryView>, ApiError> {
    if kind == SetKind::Scheduled {
        return Ok(EntryView::with_suspensions(&app.admin, entries).await?);
    }
    Ok(entries.iter().map(EntryView::from).collect())
}

/// A search hit as a set entry (the raw member parsed again for what a hit lacks).
fn entry_of_hit(kind: SetKind, hit: &SearchHit) -> SetEntry {
    SetEntry {
        kind,
        queue: hit.queue.clone(),
        score_ms: hit.score_ms.unwrap_or_default(),
        score: hit.score_ms.unwrap_or_default() as f64,
        raw: hit.raw.clone(),
        payload: gator_core::Payload::from_json(&hit.raw).ok(),
    }
}
