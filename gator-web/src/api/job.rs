//! `GET /api/jobs/{jid}`: everything known about one job: its status record, and where its
//! payload waits, found through the record (a job in a set with `Admin::find_job`, a few reads
//! whatever the set holds; a queued one, or one without a record, by the bounded search).

use super::search::MAX_BUDGET;
use super::views::{StatusView, json_or_text};
use crate::app::App;
use crate::error::{ApiError, ApiResult, Params, Segments};
use axum::Json;
use axum::extract::State;
use gator_core::admin::{DEFAULT_BUDGET, DurableState, Place, SearchField, SearchQuery, preview};
use gator_core::{JobStatus, SetKind};
use serde::{Deserialize, Serialize};

/// The most bytes of a job's arguments its own page shows unless asked for all of them.
const PAGE_ARGS: usize = 64 * 1024;

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
    /// `error` cut to a bounded size, and its `args` too unless asked for `?full=true`. A
    /// durable job's `durable` field is shown as `durable` instead.
    payload: Option<serde_json::Value>,
    /// What a durable job saved (its payload's `durable` field), waiting, suspended or
    /// running: its checkpoint, its steps with their results in order, its sleeps and slices;
    /// each value cut to a 1 KiB preview unless asked for `?full=true` (`durable.cut` says
    /// whether one was).
    durable: Option<DurableState>,
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
        durable: None,
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
        // What it saved so far is in its payload in flight.
        if let (Some(queue), Some(process)) = (&view.queue, &view.process) {
            let raw = app.admin.running_payload(queue, process, &jid).await?;
            view.durable =
                raw.and_then(|raw| DurableState::of_payload(&raw, preview_of(params.full)));
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
        // A suspended durable job sleeps in the scheduled set.
        Some(JobStatus::Scheduled { .. } | JobStatus::Suspended { .. }) => {
            Some((vec![Place::Scheduled], MAX_BUDGET))
        }
        Some(JobStatus::Retrying { .. }) => Some((vec![Place::Retry], MAX_BUDGET)),
        Some(JobStatus::Dead { .. } | JobStatus::Expired { kept: true, .. }) => {
            Some((vec![Place::Dead], MAX_BUDGET))
        }
        Some(_) => None,
    }
}

/// Finds `view`'s job among `places`, and fills in where it is and its payload (cut as the
/// job's page shows it, unless `full`). A job its record places in a set is found there through
/// its record (`Admin::find_job`: a few reads whatever the set holds); any other by the bounded
/// search (reading at most `budget` entries).
async fn look_up(
    app: &App,
    view: &mut JobView,
    places: Vec<Place>,
    budget: usize,
    full: bool,
) -> Result<(), ApiError> {
    let found = match (set_of(&places), view.queue.as_deref()) {
        (Some(kind), Some(queue)) => (app.admin.find_job(kind, Some(queue), &view.jid).await?)
            .map(|e| (places[0], e.queue, Some(e.score_ms), e.raw)),
        _ => search_for(app, view, places, budget).await?,
    };
    let Some((place, queue, score_ms, raw)) = found else {
        return Ok(());
    };
    view.place = Some(place_name(place).to_owned());
    view.queue = Some(queue);
    view.score_ms = score_ms;
    view.payload_bytes = Some(raw.len());
    view.payload = serde_json::from_str(&raw).ok();
    view.durable = DurableState::of_payload(&raw, preview_of(full));
    if let Some(serde_json::Value::Object(payload)) = &mut view.payload {
        payload.remove("durable"); // shown as `view.durable`, cut
    }
    if let Some(serde_json::Value::Object(payload)) = &mut view.payload
        && payload.remove(gator_core::payload::packed::FIELD).is_some()
        && let Ok(mut decoded) = gator_core::Payload::from_json(&raw)
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

/// The set `places` names, if it is one set.
fn set_of(places: &[Place]) -> Option<SetKind> {
    match places {
        [Place::Scheduled] => Some(SetKind::Scheduled),
        [Place::Retry] => Some(SetKind::Retry),
        [Place::Dead] => Some(SetKind::Dead),
        _ => None,
    }
}

/// `view`'s job found by the bounded search: where, its queue, its score, its payload.
async fn search_for(
    app: &App,
    view: &JobView,
    places: Vec<Place>,
    budget: usize,
) -> Result<Option<(Place, String, Option<u64>, String)>, ApiError> {
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
    Ok(found
        .hits
        .into_iter()
        .find(|h| h.jid.as_deref() == Some(view.jid.as_str()))
        .map(|hit| (hit.place, hit.queue, hit.score_ms, hit.raw)))
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

/// How much of each saved value the page shows: a preview, or all if `full`.
fn preview_of(full: bool) -> Option<usize> {
    (!full).then_some(preview::ARGS_PREVIEW)
}

fn place_name(place: Place) -> &'static str {
    match place {
        Place::Queued => "queued",
        Place::Scheduled => "scheduled",
        Place::Retry => "retry",
        Place::Dead => "dead",
    }
}
