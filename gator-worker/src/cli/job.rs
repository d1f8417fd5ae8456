//! `gator-worker job show JID`: a job's status, attempts and result, from its status record
//! (`gator_core::status`), its last progress, and a waiting job's arguments (decoded if
//! compressed); `gator-worker job cancel JID` (`Client::cancel`); `gator-worker job position
//! JID` (`cli::position`).

use crate::cli::AdminError;
use crate::cli::table::{self, time};
use clap::Subcommand;
use gator_core::admin::{Place, SearchField, SearchQuery};
use gator_core::{Admin, JobStatus, Payload};
use std::io::Write;

/// What `gator-worker job` does.
#[derive(Debug, Subcommand)]
pub enum JobAction {
    /// Shows a job's status (queued, scheduled, running, retrying, dead, done or unknown), its
    /// attempts, its last error and the result it returned; for a job that waits (queued,
    /// scheduled, retrying, dead), its arguments, decoded if they were stored compressed.
    ///
    /// Every known queue is searched. A finished job is shown for as long as the worker's
    /// `--retention` (24 h by default); a dead one as long as the dead set keeps it. An unknown
    /// jid is shown as `unknown` and exits 1.
    Show {
        /// The job's jid, as `dispatch` returned it.
        jid: String,
        /// Print one JSON object instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Shows where a queued job stands: the jobs before it in its queue, and when it should
    /// start at the queue's throughput of the last 5 minutes (or why there is no estimate);
    /// for a scheduled job, when it is due.
    Position {
        /// The job's jid.
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
    match action {
        JobAction::Show { jid, json } => show(admin, &jid, json, out).await,
        JobAction::Cancel { jid, json } => cancel(admin, &jid, json, out).await,
        JobAction::Position { jid, json } => {
            crate::cli::position::show(admin, &jid, json, out).await
        }
    }
}

/// `job show`: the job's fields, as aligned lines or one JSON object.
async fn show(
    admin: &Admin,
    jid: &str,
    json: bool,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let details = admin.client().job_details(jid).await?;
    let (queue, status, result, progress) = match details {
        Some(d) => (Some(d.queue), d.status, d.result, d.progress),
        None => (None, JobStatus::Unknown, None, None),
    };
    let mut fields: Vec<(&str, serde_json::Value)> =
        vec![("jid", jid.into()), ("status", status.name().into())];
    fields.extend(status_fields(&status, result.as_deref()));
    if let Some(p) = progress {
        fields.push(("progress", p.fraction.into()));
        fields.push(("note", p.note.into()));
        fields.push(("reported", time(p.at).into()));
    }
    fields.extend(payload_fields(admin, jid, queue.as_deref(), &status).await?);
    if let Some(queue) = queue {
        fields.insert(2, ("queue", queue.into()));
    }
    table::print_fields(out, fields, json)?;
    // Shown, and an error all the same (the process exits 1), as the HTTP API answers 404: a
    // script that checks the exit code learns the jid is wrong.
    if status == JobStatus::Unknown {
        return Err(AdminError::UnknownJob {
            jid: jid.to_owned(),
        });
    }
    Ok(())
}

/// The arguments of a job that waits (decoded if they are stored compressed, cut to a preview
/// if large), read where its status says it is, within a search's default budget; with
/// `packed`, their sizes if compressed. Nothing for a job done, running or unknown.
async fn payload_fields(
    admin: &Admin,
    jid: &str,
    queue: Option<&str>,
    status: &JobStatus,
) -> Result<Vec<(&'static str, serde_json::Value)>, AdminError> {
    let place = match status {
        JobStatus::Queued => Place::Queued,
        JobStatus::Scheduled { .. } => Place::Scheduled,
        JobStatus::Retrying { .. } => Place::Retry,
        JobStatus::Dead { .. } => Place::Dead,
        _ => return Ok(Vec::new()),
    };
    let mut query = SearchQuery::new(jid);
    query.field = SearchField::Jid;
    query.places = vec![place];
    query.queue = queue.map(str::to_owned);
    let page = admin.search(&query).await?;
    let Some(hit) = page
        .hits
        .into_iter()
        .find(|h| h.jid.as_deref() == Some(jid))
    else {
        return Ok(Vec::new());
    };
    let mut fields = vec![("args", hit.args)];
    let Ok(mut payload) = Payload::from_json(&hit.raw) else {
        return Ok(fields);
    };
    admin.load_aside(&mut payload).await?;
    if let Some(packing) = payload.packing {
        let sizes = if packing.aside {
            fields[0].1 = gator_core::admin::preview::args(payload.args);
            format!(
                "stored aside: {} bytes of arguments in {}",
                packing.raw, packing.stored
            )
        } else {
            format!(
                "zstd: {} bytes of arguments stored in {}",
                packing.raw, packing.stored
            )
        };
        fields.push(("packed", sizes.into()));
    }
    Ok(fields)
}

/// What each status adds to `job show`: its times, attempts, error, and a success's result.
fn status_fields(
    status: &JobStatus,
    result: Option<&str>,
) -> Vec<(&'static str, serde_json::Value)> {
    match status {
        JobStatus::Scheduled { at } => vec![("due", time(*at).into())],
        JobStatus::Suspended { until, reason } => vec![
            ("wakes", time(*until).into()),
            ("reason", reason.clone().into()),
        ],
        JobStatus::Running {
            process,
            since,
            attempt,
        } => vec![
            ("process", process.clone().into()),
            ("since", time(*since).into()),
            ("attempt", (*attempt).into()),
        ],
        JobStatus::Retrying {
            attempt,
            next_at,
            error,
        } => vec![
            ("attempts", (*attempt).into()),
            ("next_run", time(*next_at).into()),
            ("error", error.clone().into()),
        ],
        JobStatus::Dead {
            at,
            attempts,
            error,
        } => vec![
            ("died", time(*at).into()),
            ("attempts", (*attempts).into()),
            ("error", error.clone().into()),
        ],
        JobStatus::Done {
            finished_at,
            attempts,
        } => vec![
            ("finished", time(*finished_at).into()),
            ("attempts", (*attempts).into()),
            ("result", result_value(result)),
        ],
        JobStatus::Cancelled { at } => vec![("cancelled", time(*at).into())],
        JobStatus::Expired { .. } => expired_fields(status),
        JobStatus::Discarded {
            at,
            attempts,
            error,
        } => vec![
            ("discarded", time(*at).into()),
            ("attempts", (*attempts).into()),
            ("error", error.clone().into()),
        ],
        JobStatus::AwaitingReply { key, deadline } => vec![
            ("key", key.clone().into()),
            ("deadline", time(*deadline).into()),
        ],
        JobStatus::Queued | JobStatus::Unknown => Vec::new(),
    }
}

/// What an expired job adds to `job show`: when it was found expired, its deadline, its
/// attempts, and whether it is kept in the dead set.
fn expired_fields(status: &JobStatus) -> Vec<(&'static str, serde_json::Value)> {
    let JobStatus::Expired {
        at,
        attempts,
        deadline,
        kept,
    } = status
    else {
        return Vec::new();
    };
    let fate = if *kept {
        "kept in the dead set"
    } else {
        "dropped"
    };
    vec![
        ("expired", time(*at).into()),
        ("deadline", time(*deadline).into()),
        ("attempts", (*attempts).into()),
        ("error", gator_core::expiry::REASON.into()),
        ("kept", fate.into()),
    ]
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

/// A success's result as JSON (text that is not JSON as a string; none as `null`).
fn result_value(result: Option<&str>) -> serde_json::Value {
    result
        .map(|r| serde_json::from_str(r).unwrap_or_else(|_| r.into()))
        .unwrap_or(serde_json::Value::Null)
}
