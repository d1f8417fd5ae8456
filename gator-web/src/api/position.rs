//! A job's progress and position as JSON: the `progress` of `GET /api/jobs/{jid}`, and
//! `GET /api/jobs/{jid}/position` (`Client::position`).

use super::views::ms;
use crate::app::App;
use crate::error::{ApiResult, Segments};
use axum::Json;
use axum::extract::State;
use gator_core::{ExpectedStart, ParkedPlace, Position, Progress};
use serde::Serialize;

/// A job's last reported progress.
#[derive(Debug, Serialize)]
pub(crate) struct ProgressView {
    /// How much is done, 0 to 1.
    fraction: f64,
    /// What the job said with it.
    note: String,
    /// When it was written (ms, Redis time).
    at_ms: u64,
    /// The attempt that reported it.
    attempt: u32,
}

impl From<&Progress> for ProgressView {
    fn from(p: &Progress) -> ProgressView {
        ProgressView {
            fraction: p.fraction,
            note: p.note.clone(),
            at_ms: ms(p.at),
            attempt: p.attempt,
        }
    }
}

/// Where a job stands: `state` is `queued`, `parked`, `scheduled` or the status of a job that
/// does not wait (`running`, `done`, ..., `unknown`). A parked job's `position`, `ahead` and
/// `length` count the jobs of its parking key (`key`), or of the critical set.
#[derive(Debug, Default, Serialize)]
pub(crate) struct PositionView {
    jid: String,
    state: String,
    queue: Option<String>,
    /// 1 for the job fetched next.
    position: Option<u64>,
    ahead: Option<u64>,
    length: Option<u64>,
    /// Whether the job was found at its place (else `ahead` is an estimate).
    exact: Option<bool>,
    /// When it should start (ms, Redis time), and the throughput that says so.
    expected_start_ms: Option<u64>,
    per_minute: Option<f64>,
    /// Why there is no expected start.
    no_estimate: Option<String>,
    /// A scheduled job's due time (ms, Redis time).
    due_ms: Option<u64>,
    /// A parked job's parking key (`position`, `ahead` and `length` count its jobs); none for
    /// a critical job.
    key: Option<String>,
    /// Whether a parked job is critical (in the critical set, which starts first).
    critical: Option<bool>,
    /// The parked job's queue's parking keys ready now, and holding parked jobs.
    ready_keys: Option<u64>,
    waiting_keys: Option<u64>,
}

impl PositionView {
    fn start(&mut self, start: ExpectedStart) {
        match start {
            ExpectedStart::At { at, per_minute } => {
                (self.expected_start_ms, self.per_minute) = (Some(ms(at)), Some(per_minute));
            }
            ExpectedStart::Unknown { reason } => self.no_estimate = Some(reason.into()),
        }
    }

    fn parked(&mut self, place: ParkedPlace) {
        (self.position, self.ahead) = (Some(place.ahead + 1), Some(place.ahead));
        self.length = Some(place.length);
        self.critical = Some(place.key.is_none());
        self.key = place.key;
        (self.ready_keys, self.waiting_keys) = (Some(place.ready_keys), Some(place.waiting_keys));
        self.start(place.expected_start);
    }
}

/// `GET /api/jobs/{jid}/position`.
pub(crate) async fn position(
    State(app): State<App>,
    Segments(jid): Segments<String>,
) -> ApiResult<PositionView> {
    let position = app.client.position(&jid).await?;
    let mut view = PositionView {
        jid,
        ..PositionView::default()
    };
    match position {
        Position::Queued {
            queue,
            ahead,
            length,
            exact,
            expected_start,
        } => {
            view.state = "queued".into();
            view.queue = Some(queue);
            (view.position, view.ahead) = (Some(ahead + 1), Some(ahead));
            (view.length, view.exact) = (Some(length), Some(exact));
            view.start(expected_start);
        }
        Position::Parked { queue, place } => {
            view.state = "parked".into();
            view.queue = Some(queue);
            if let Some(place) = place {
                view.parked(place);
            }
        }
        Position::Scheduled { at } => {
            view.state = "scheduled".into();
            view.due_ms = Some(ms(at));
        }
        Position::NotWaiting { status } => view.state = status.name().into(),
    }
    Ok(Json(view))
}
