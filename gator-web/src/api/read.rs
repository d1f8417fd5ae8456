//! The GET side of the API that reads state directly: overview, history, queues, processes,
//! flows, cron, limits; each a thin call into `gator_core::inspect` and friends. Reads that
//! look for jobs (a set's pages, one job, search) are in `find`.

use super::views::{PeriodicView, WorkflowView};
use crate::app::App;
use crate::error::{ApiError, ApiResult, Params, Segments};
use axum::Json;
use axum::extract::State;
use gator_core::admin::FlowStatus;
use gator_core::admin::{
    HistoryPoint, HistorySpan, JourneyInFlight, Overview, ProcessInfo, QueueInfo,
};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// The most flows one call may ask for.
const MAX_FLOWS: usize = 500;
pub(crate) async fn overview(State(app): State<App>) -> ApiResult<Overview> {
    Ok(Json(app.admin.overview().await?))
}

#[derive(Debug, Deserialize)]
pub(crate) struct HistoryParams {
    span: Option<String>,
    queue: Option<String>,
}

pub(crate) async fn history(
    State(app): State<App>,
    Params(p): Params<HistoryParams>,
) -> ApiResult<Vec<HistoryPoint>> {
    let span = match p.span.as_deref() {
        None => HistorySpan::Hour,
        Some(text) => HistorySpan::from_str(text).map_err(|_| {
            ApiError::bad_request(format!("unknown span {text:?}: use hour, day or week"))
        })?,
    };
    Ok(Json(app.admin.history(span, p.queue.as_deref()).await?))
}

pub(crate) async fn queues(State(app): State<App>) -> ApiResult<Vec<QueueInfo>> {
    Ok(Json(app.admin.queue_infos().await?))
}

/// One queue: its numbers and its flow controls.
#[derive(Debug, Serialize)]
pub(crate) struct QueueDetail {
    info: QueueInfo,
    flow: FlowStatus,
}

pub(crate) async fn queue(
    State(app): State<App>,
    Segments(queue): Segments<String>,
) -> ApiResult<QueueDetail> {
    gator_core::admin::validate_stored_queue(&queue)?;
    if !app.admin.known_queues().await?.contains(&queue) {
        return Err(ApiError::not_found(format!("no queue {queue:?}")));
    }
    let info = app.admin.queue_info(&queue).await?;
    let flow = app.admin.flow_status(&queue).await?;
    Ok(Json(QueueDetail { info, flow }))
}

pub(crate) async fn processes(State(app): State<App>) -> ApiResult<Vec<ProcessInfo>> {
    Ok(Json(app.admin.processes().await?))
}

#[derive(Debug, Deserialize)]
pub(crate) struct LimitParam {
    limit: Option<usize>,
}

pub(crate) async fn flows(
    State(app): State<App>,
    Params(p): Params<LimitParam>,
) -> ApiResult<Vec<JourneyInFlight>> {
    let limit = p.limit.unwrap_or(100).clamp(1, MAX_FLOWS);
    Ok(Json(app.admin.journeys_in_flight(limit).await?))
}

pub(crate) async fn workflow(
    State(app): State<App>,
    Segments(id): Segments<String>,
) -> ApiResult<WorkflowView> {
    match app.client.workflow_status(&id).await? {
        Some(status) => Ok(Json(WorkflowView::from(&status))),
        None => Err(ApiError::not_found(format!("no workflow {id}"))),
    }
}

/// The periodic entries, with Redis's clock for "in 3 min".
#[derive(Debug, Serialize)]
pub(crate) struct CronList {
    now_ms: u64,
    entries: Vec<PeriodicView>,
}

pub(crate) async fn cron(State(app): State<App>) -> ApiResult<CronList> {
    let entries = app.admin.periodic_entries().await?;
    Ok(Json(CronList {
        now_ms: app.client.redis_time().await?,
        entries: entries.into_iter().map(PeriodicView::from).collect(),
    }))
}

/// The flow controls of every controlled queue, with Redis's clock for the limiters' slots.
#[derive(Debug, Serialize)]
pub(crate) struct Limits {
    now_ms: u64,
    queues: Vec<FlowStatus>,
    /// Queues that could not be read, each with the reason: the others are shown.
    broken: Vec<Broken>,
}

/// A queue that could not be read.
#[derive(Debug, Serialize)]
pub(crate) struct Broken {
    queue: String,
    reason: String,
}

pub(crate) async fn limits(State(app): State<App>) -> ApiResult<Limits> {
    let (mut queues, mut broken) = (Vec::new(), Vec::new());
    for info in app.admin.queue_infos().await? {
        if let Some(reason) = info.broken {
            broken.push(Broken {
                queue: info.name,
                reason,
            });
        } else if info.controlled {
            match app.admin.flow_status(&info.name).await {
                Ok(status) => queues.push(status),
                Err(e) if e.is_broken_data() => broken.push(Broken {
                    queue: info.name,
                    reason: e.to_string(),
                }),
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(Json(Limits {
        now_ms: app.client.redis_time().await?,
        queues,
        broken,
    }))
}

/// The job catalogue: every job a live or recent worker published, with its options and the
/// live workers that run it.
#[derive(Debug, Serialize)]
pub(crate) struct CatalogueList {
    jobs: Vec<gator_core::catalogue::Known>,
    /// Why the catalogue could not be read (a key of it holds what Gator did not write): it is
    /// shown empty.
    broken: Option<String>,
}

pub(crate) async fn catalogue(State(app): State<App>) -> ApiResult<CatalogueList> {
    let (jobs, broken) = match app.client.catalogue().await {
        Ok(jobs) => (jobs, None),
        Err(e @ gator_core::Error::BrokenKey { .. }) => (Vec::new(), Some(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    Ok(Json(CatalogueList { jobs, broken }))
}
