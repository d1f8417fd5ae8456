//! `gator-worker job position JID`: where a queued or parked job stands (`Client::position`).

use crate::cli::AdminError;
use crate::cli::table::{self, time};
use gator_core::{Admin, ExpectedStart, ParkedPlace, Position};
use std::io::Write;

/// `job position`: the job's place and expected start, as aligned lines or one JSON object.
pub async fn show(
    admin: &Admin,
    jid: &str,
    json: bool,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let position = admin.client().position(jid).await?;
    table::print_fields(out, fields(jid, &position), json)?;
    if matches!(&position, Position::NotWaiting { status } if status.state().is_none()) {
        return Err(AdminError::UnknownJob {
            jid: jid.to_owned(),
        });
    }
    Ok(())
}

/// What `job position` prints, in order.
fn fields(jid: &str, position: &Position) -> Vec<(&'static str, serde_json::Value)> {
    let mut fields = vec![("jid", jid.into())];
    match position {
        Position::Queued {
            queue,
            ahead,
            length,
            exact,
            expected_start,
        } => {
            fields.push(("status", "queued".into()));
            fields.push(("queue", queue.clone().into()));
            fields.push(("position", (ahead + 1).into()));
            fields.push(("ahead", (*ahead).into()));
            fields.push(("length", (*length).into()));
            fields.push(("exact", (*exact).into()));
            fields.extend(start_fields(expected_start));
        }
        Position::Parked { queue, place } => {
            fields.push(("status", "parked".into()));
            fields.push(("queue", queue.clone().into()));
            if let Some(place) = place {
                fields.extend(parked_fields(place));
            }
        }
        Position::Scheduled { at } => {
            fields.push(("status", "scheduled".into()));
            fields.push(("due", time(*at).into()));
        }
        Position::NotWaiting { status } => fields.push(("status", status.name().into())),
    }
    fields
}

/// A parked job's place among its parking key's jobs (the critical set's, for a critical job:
/// no key).
fn parked_fields(place: &ParkedPlace) -> Vec<(&'static str, serde_json::Value)> {
    // The separators of a parking key's parts (rate limiter, no-overlap key), made readable.
    let key = place.key.as_ref().map(|key| {
        key.replace('\u{1f}', " rate=")
            .replace('\u{1e}', " overlap=")
    });
    let mut fields = vec![
        ("critical", place.key.is_none().into()),
        ("key", key.into()),
        ("position", (place.ahead + 1).into()),
        ("ahead", place.ahead.into()),
        ("length", place.length.into()),
        ("ready", place.ready_keys.into()),
        ("waiting", place.waiting_keys.into()),
    ];
    fields.extend(start_fields(&place.expected_start));
    fields
}

/// When the job should start, or why that is unknown.
fn start_fields(start: &ExpectedStart) -> Vec<(&'static str, serde_json::Value)> {
    match start {
        ExpectedStart::At { at, per_minute } => {
            vec![
                ("starts", time(*at).into()),
                ("per_min", (*per_minute).into()),
            ]
        }
        ExpectedStart::Unknown { reason } => {
            vec![
                ("starts", serde_json::Value::Null),
                ("why", (*reason).into()),
            ]
        }
    }
}
