//! The GET side of the API that looks for jobs: a set's pages (filtered through the bounded
//! search) and one job by its jid. Search itself is in `search`.

use super::search::MAX_BUDGET;
use super::views::{EntryView, StatusView, json_or_text};
use crate::App;
use crate::error::{ApiError, ApiResult, Params, Segments};
use axum::Json;
use axum::extract::State;
use gator_core::admin::{DEFAULT_BUDGET, Place, SearchField, SearchHit, SearchQuery, preview};
use gator_core::{JobStatus, SetKind};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// The most entries one page of a set, or of search hits, may ask for.
pub(crate) const MAX_PAGE: usize = 500;
/// The most bytes of a job's arguments its own page shows unless asked for all of them.
const PAGE_ARGS: usize = 64 * 1024;

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
            answer.entries = entries.iter().map(EntryView::from).collect();
            return Ok(Json(answer));
        }
        let found = (app.admin)
            .set_page(kind, queue, cursor.as_deref(), per_page)
            .await?;
        answer.entries = found.entries.iter().map(EntryView::from).collect();
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
    answer.entries = found
        .hits
        .iter()
        .filter(matches)
        .map(|hit| entry_of_hit(kind, hit))
        .collect();
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

/// A search hit shown as a set entry (the raw member parsed again for what a hit lacks).
fn entry_of_hit(kind: SetKind, hit: &SearchHit) -> EntryView {
    let entry = gator_core::SetEntry {
        kind,
        queue: hit.queue.clone(),
        score_ms: hit.score_ms.unwrap_or_default(),
        score: hit.score_ms.unwrap_or_default() as f64,
        raw: hit.raw.clone(),
        payload: gator_core::Payload::from_json(&hit.raw).ok(),
    };
    EntryView::from(&entry)
}

/// Everything known about one job.
#[derive(Debug, Serialize)]
pub(crate) struct JobView {
    jid: String,
    /// Its status record (`unknown` without one).
    status: StatusView,
    /// The queue its status record or payload is in.
    queue: Option<String>,
    /// What it returned, once done.
    result: Option<serde_json::Value>,
    /// The last progress it reported (`ctx.progress`).
    progress: Option<super::position::ProgressView>,
    /// Where its payload was found: `queued`, `scheduled`, `retry`, `dead`, or `running`.
    place: Option<String>,
    /// The payload as stored, parsed (with `args`, `error`, `attempt`, `failed_at` ...); its
    /// `error` cut to a bounded size, and its `args` too unless asked for `?full=true`.
    payload: Option<serde_json::Value>,
    /// The payload's size as stored, in bytes.
    payload_bytes: Option<usize>,
    /// For a payload stored with its arguments compressed (`gator_core::payload::packed`): the
    /// arguments' size as JSON text and as stored, in bytes; `payload.args` shows them decoded.
    packed: Option<gator_core::payload::packed::Packing>,
    /// Whether `payload.args` is a preview (ask again with `?full=true` for all of it).
    args_cut: bool,
    /// Due time or time of death, for a job in a set.
    score_ms: Option<u64>,
    /// For a running job: the process and how long it has run.
    running: Option<gator_core::admin::RunningJob>,
    process: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct JobParams {
    /// Serve the arguments whole, however large.
    #[serde(default)]
    full: bool,
}

pub(crate) async fn job(
    State(app): State<App>,
    Segments(jid): Segments<String>,
    Params(params): Params<JobParams>,
) -> ApiResult<JobView> {
    let details = app.client.job_details(&jid).await?;
    let mut view = JobView {
        jid: jid.clone(),
        status: details.as_ref().map_or_else(
            || StatusView::from(&gator_core::JobStatus::Unknown),
            |d| StatusView::from(&d.status),
        ),
        queue: details.as_ref().map(|d| d.queue.clone()),
        result: details
            .as_ref()
            .and_then(|d| d.result.as_deref())
            .filter(|r| !r.is_empty())
            .map(json_or_text),
        progress: details
            .as_ref()
            .and_then(|d| d.progress.as_ref())
            .map(Into::into),
        place: None,
        payload: None,
        payload_bytes: None,
        packed: None,
        args_cut: false,
        score_ms: None,
        running: None,
        process: None,
    };
    let running = matches!(
        details.as_ref().map(|d| &d.status),
        Some(JobStatus::Running { .. })
    );
    if running {
        for process in app.admin.processes().await? {
            if let Some(job) = process.jobs.iter().find(|j| j.jid == jid) {
                view.place = Some("running".to_owned());
                view.queue = Some(job.queue.clone());
                view.running = Some(job.clone());
                view.process = Some(process.id.clone());
            }
        }
    }
    // The payload is looked for only where the record says it waits (a job done, cancelled or
    // running has none stored); without a record, everywhere, within the default budget.
    let places = places_of(details.as_ref().map(|d| &d.status));
    if let (None, Some((places, budget))) = (&view.place, places) {
        look_up(&app, &mut view, places, budget, params.full).await?;
    }
    if details.is_none() && view.place.is_none() {
        return Err(ApiError::not_found(format!(
            "no job {jid}: never dispatched, deleted, or finished longer ago than the retention"
        )));
    }
    Ok(Json(view))
}

/// Where to look for a job's payload, and how many entries to read, given its status.
fn places_of(status: Option<&JobStatus>) -> Option<(Vec<Place>, usize)> {
    match status {
        None | Some(JobStatus::Unknown) => Some((Vec::new(), DEFAULT_BUDGET)),
        Some(JobStatus::Queued) => Some((vec![Place::Queued], MAX_BUDGET)),
        Some(JobStatus::Scheduled { .. }) => Some((vec![Place::Scheduled], MAX_BUDGET)),
        Some(JobStatus::Retrying { .. }) => Some((vec![Place::Retry], MAX_BUDGET)),
        Some(JobStatus::Dead { .. }) => Some((vec![Place::Dead], MAX_BUDGET)),
        Some(_) => None,
    }
}

/// Finds `view`'s job among `places` (reading at most `budget` entries), and fills in where it
/// is and its payload (cut as the job's page shows it, unless `full`).
async fn look_up(
    app: &App,
    view: &mut JobView,
    places: Vec<Place>,
    budget: usize,
    full: bool,
) -> Result<(), ApiError> {
    let found = app
        .admin
        .search(&SearchQuery {
            text: view.jid.clone(),
            field: SearchField::Jid,
            places,
            queue: view.queue.clone(),
            cursor: None,
            limit: 1,
            budget,
        })
        .await?;
    let Some(hit) = found
        .hits
        .into_iter()
        .find(|h| h.jid.as_deref() == Some(view.jid.as_str()))
    else {
        return Ok(());
    };
    view.place = Some(place_name(hit.place).to_owned());
    view.queue = Some(hit.queue);
    view.score_ms = hit.score_ms;
    view.payload_bytes = Some(hit.raw.len());
    view.payload = serde_json::from_str(&hit.raw).ok();
    if let Some(serde_json::Value::Object(payload)) = &mut view.payload
        && payload.remove(gator_core::payload::packed::FIELD).is_some()
        && let Ok(mut decoded) = gator_core::Payload::from_json(&hit.raw)
    {
        // Packed arguments are shown decoded, with their sizes; read from their key if aside.
        app.admin.load_aside(&mut decoded).await?;
        payload.insert("args".to_owned(), decoded.args);
        view.packed = decoded.packing;
    }
    if let Some(serde_json::Value::Object(payload)) = &mut view.payload {
        view.args_cut = shown(payload, full);
    }
    Ok(())
}

/// Cuts a payload's error, and its args unless `full`, as the job's page shows them; whether
/// the args were cut.
fn shown(payload: &mut serde_json::Map<String, serde_json::Value>, full: bool) -> bool {
    if let Some(serde_json::Value::String(error)) = payload.get_mut("error") {
        *error = preview::error(error);
    }
    if full {
        return false;
    }
    match payload.get_mut("args") {
        Some(args) => {
            *args = preview::args_within(std::mem::take(args), PAGE_ARGS);
            preview::is_cut(args)
        }
        None => false,
    }
}

fn place_name(place: Place) -> &'static str {
    match place {
        Place::Queued => "queued",
        Place::Scheduled => "scheduled",
        Place::Retry => "retry",
        Place::Dead => "dead",
    }
}
