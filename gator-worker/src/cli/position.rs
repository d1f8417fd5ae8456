//! `gator-worker job position JID`: where a queued job stands (`Client::position`).

use crate::cli::AdminError;
use crate::cli::job::time;
use gator_core::{Admin, ExpectedStart, Position};
use std::io::Write;

/// `job position`: the job's place and expected start, as aligned lines or one JSON object.
pub async fn show(
    admin: &Admin,
    jid: &str,
    json: bool,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let position = admin.client().position(jid).await?;
    let fields = fields(jid, &position);
    if json {
        let object: serde_json::Map<String, serde_json::Value> =
            fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        writeln!(out, "{}", serde_json::Value::Object(object))?;
    } else {
        for (name, value) in fields {
            let text = match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            writeln!(out, "{name:<9} {text}")?;
        }
    }
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
            match expected_start {
                ExpectedStart::At { at, per_minute } => {
                    fields.push(("starts", time(*at).into()));
                    fields.push(("per_min", (*per_minute).into()));
                }
                ExpectedStart::Unknown { reason } => {
                    fields.push(("starts", serde_json::Value::Null));
                    fields.push(("why", (*reason).into()));
                }
            }
        }
        Position::Parked { queue } => {
            fields.push(("status", "parked".into()));
            fields.push(("queue", queue.clone().into()));
        }
        Position::Scheduled { at } => {
            fields.push(("status", "scheduled".into()));
            fields.push(("due", time(*at).into()));
        }
        Position::NotWaiting { status } => fields.push(("status", status.name().into())),
    }
    fields
}
