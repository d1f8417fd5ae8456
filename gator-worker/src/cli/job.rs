//! `gator-worker job show JID`: a job's status, attempts and result, from its status record
//! (`gator_core::store::status`); `gator-worker job cancel JID` (`Client::cancel`).

use crate::cli::admin::AdminError;
use clap::Subcommand;
use gator_core::{Admin, JobStatus};
use std::io::Write;
use std::time::SystemTime;

/// What `gator-worker job` does.
#[derive(Debug, Subcommand)]
pub enum JobAction {
    /// Shows a job's status (queued, scheduled, running, retrying, dead, done or unknown), its
    /// attempts, its last error and the result it returned.
    ///
    /// Every known queue is searched. A finished job is shown for as long as the worker's
    /// `--retention` (24 h by default); a dead one as long as the dead set keeps it.
    Show {
        /// The job's jid, as `dispatch` returned it.
        jid: String,
        /// Print one JSON object instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Cancels a job: removes it if it waits (queued, scheduled, retrying), or has the worker
    /// running it stop it (its `ctx.cancelled()` fires within a second). A cancelled job is
    /// never retried. Exits with an error if the job is unknown or already finished.
    Cancel {
        /// The job's jid.
        jid: String,
        /// Print one JSON object instead of a line.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `action`, writing what it found to `out`.
pub async fn run(admin: &Admin, action: JobAction, out: &mut impl Write) -> Result<(), AdminError> {
    let (jid, json) = match action {
        JobAction::Show { jid, json } => (jid, json),
        JobAction::Cancel { jid, json } => return cancel(admin, &jid, json, out).await,
    };
    let details = admin.client().job_details(&jid).await?;
    let (queue, status, result) = match details {
        Some(d) => (Some(d.queue), d.status, d.result),
        None => (None, JobStatus::Unknown, None),
    };
    let mut fields: Vec<(&str, serde_json::Value)> = vec![
        ("jid", jid.clone().into()),
        ("status", status.name().into()),
    ];
    if let Some(queue) = queue {
        fields.push(("queue", queue.into()));
    }
    match &status {
        JobStatus::Scheduled { at } => fields.push(("due", time(*at).into())),
        JobStatus::Running {
            process,
            since,
            attempt,
        } => {
            fields.push(("process", process.clone().into()));
            fields.push(("since", time(*since).into()));
            fields.push(("attempt", (*attempt).into()));
        }
        JobStatus::Retrying {
            attempt,
            next_at,
            error,
        } => {
            fields.push(("attempts", (*attempt).into()));
            fields.push(("next_run", time(*next_at).into()));
            fields.push(("error", error.clone().into()));
        }
        JobStatus::Dead {
            at,
            attempts,
            error,
        } => {
            fields.push(("died", time(*at).into()));
            fields.push(("attempts", (*attempts).into()));
            fields.push(("error", error.clone().into()));
        }
        JobStatus::Done {
            finished_at,
            attempts,
        } => {
            fields.push(("finished", time(*finished_at).into()));
            fields.push(("attempts", (*attempts).into()));
            let value = result
                .as_deref()
                .map(|r| serde_json::from_str(r).unwrap_or_else(|_| r.into()))
                .unwrap_or(serde_json::Value::Null);
            fields.push(("result", value));
        }
        JobStatus::Cancelled { at } => fields.push(("cancelled", time(*at).into())),
        JobStatus::Discarded {
            at,
            attempts,
            error,
        } => {
            fields.push(("discarded", time(*at).into()));
            fields.push(("attempts", (*attempts).into()));
            fields.push(("error", error.clone().into()));
        }
        JobStatus::AwaitingReply { key, deadline } => {
            fields.push(("key", key.clone().into()));
            fields.push(("deadline", time(*deadline).into()));
        }
        JobStatus::Queued | JobStatus::Unknown => {}
    }
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
    Ok(())
}

/// `job cancel`: what [`Client::cancel`] did, as a line or a JSON object.
async fn cancel(
    admin: &Admin,
    jid: &str,
    json: bool,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    use gator_core::Cancellation;
    let (outcome, line) = match admin.client().cancel(jid).await? {
        Cancellation::Removed => ("removed", format!("cancelled {jid}: it will not run")),
        Cancellation::Stopping => (
            "stopping",
            format!("cancelled {jid}: the worker running it stops it within a second"),
        ),
        Cancellation::Finished(status) => {
            return Err(AdminError::NotCancellable {
                reason: format!("job {jid} has already finished: it is {}", status.name()),
            });
        }
        Cancellation::Unknown => {
            return Err(AdminError::UnknownJob {
                jid: jid.to_owned(),
            });
        }
    };
    if json {
        writeln!(
            out,
            "{}",
            serde_json::json!({ "jid": jid, "cancelled": outcome })
        )?;
    } else {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

fn time(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}
