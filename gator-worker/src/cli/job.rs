//! `gator-worker job show JID`: a job's status, attempts and result, from its status record
//! (`gator_core::status`), its last progress, a waiting job's arguments (decoded if
//! compressed), and what a durable job saved (its payload's `durable` field: read from the
//! scheduled set for a suspended job, from its process's in-flight list for a running one); `gator-worker job cancel JID` (`Client::cancel`); `gator-worker job position
//! JID` (`cli::position`).

use crate::cli::AdminError;
use crate::cli::table::{self, time};
use clap::Subcommand;
use gator_core::admin::{DurableState, Place, SearchField, SearchQuery, preview};
use gator_core::{Admin, JobStatus, Payload, SetKind};
use std::io::Write;

/// What `gator-worker job` does.
#[derive(Debug, Subcommand)]
pub enum JobAction {
    /// Shows a job's status (queued, scheduled, suspended, running, retrying, dead, done or
    /// unknown), its attempts, its last error and the result it returned; for a job that waits
    /// (queued, scheduled, suspended, retrying, dead), its arguments, decoded if they were
    /// stored compressed; for a suspended job, when it wakes and why (`sleep 2`, `slice 3`).
    ///
    /// A durable job (one that waits, is suspended or runs) also shows what it saved: its
    /// checkpoint, its steps with their results in the order they succeeded, the sleeps it
    /// slept and the slices it yielded; as lines each value cut to 1 KiB, with `--json` whole
    /// (one `durable` object).
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
    fields.extend(payload_fields(admin, jid, queue.as_deref(), &status, json).await?);
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
/// `packed`, their sizes if compressed; and what a durable job saved ([`durable_fields`]). A
/// running job shows only what it saved, read from its process's in-flight list; a job done or
/// unknown, nothing.
async fn payload_fields(
    admin: &Admin,
    jid: &str,
    queue: Option<&str>,
    status: &JobStatus,
    json: bool,
) -> Result<Vec<(&'static str, serde_json::Value)>, AdminError> {
    let (mut args, raw) = match status {
        JobStatus::Running { process, .. } => {
            let Some(queue) = queue else {
                return Ok(Vec::new());
            };
            let raw = admin.running_payload(queue, process, jid).await?;
            return Ok(raw.map_or_else(Vec::new, |raw| durable_fields(&raw, json)));
        }
        // Parked in the scheduled set: found through its record, however many sleep there.
        JobStatus::Suspended { .. } => {
            let Some(entry) = admin.find_job(SetKind::Scheduled, queue, jid).await? else {
                return Ok(Vec::new());
            };
            let args = entry
                .payload
                .as_ref()
                .map(|p| preview::args(p.args.clone()));
            (args.unwrap_or_default(), entry.raw)
        }
        _ => match search_waiting(admin, jid, queue, status).await? {
            Some(found) => found,
            None => return Ok(Vec::new()),
        },
    };
    let packed = packed_fields(admin, &raw, &mut args).await?;
    let mut fields = vec![("args", args)];
    fields.extend(packed);
    fields.extend(durable_fields(&raw, json));
    Ok(fields)
}

/// A waiting job's arguments (a preview) and payload, found by the bounded search where its
/// status says it waits; `None` for a job that does not wait, or was not found.
async fn search_waiting(
    admin: &Admin,
    jid: &str,
    queue: Option<&str>,
    status: &JobStatus,
) -> Result<Option<(serde_json::Value, String)>, AdminError> {
    let place = match status {
        JobStatus::Queued => Place::Queued,
        JobStatus::Scheduled { .. } => Place::Scheduled,
        JobStatus::Retrying { .. } => Place::Retry,
        JobStatus::Dead { .. } => Place::Dead,
        _ => return Ok(None),
    };
    let mut query = SearchQuery::new(jid);
    query.field = SearchField::Jid;
    query.places = vec![place];
    query.queue = queue.map(str::to_owned);
    let page = admin.search(&query).await?;
    Ok(page
        .hits
        .into_iter()
        .find(|h| h.jid.as_deref() == Some(jid))
        .map(|hit| (hit.args, hit.raw)))
}

/// For arguments stored compressed or aside: their sizes (`packed`), and `args` decoded.
async fn packed_fields(
    admin: &Admin,
    raw: &str,
    args: &mut serde_json::Value,
) -> Result<Vec<(&'static str, serde_json::Value)>, AdminError> {
    let Ok(mut payload) = Payload::from_json(raw) else {
        return Ok(Vec::new());
    };
    admin.load_aside(&mut payload).await?;
    let Some(packing) = payload.packing else {
        return Ok(Vec::new());
    };
    let sizes = if packing.aside {
        *args = preview::args(payload.args);
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
    Ok(vec![("packed", sizes.into())])
}

/// What a durable job saved (`DurableState`): with `json`, one `durable` object with every
/// value whole; as lines, its checkpoint, one `step` line per step (`name: result`) in order,
/// its sleeps and slices, each value cut to a preview. Nothing for a job that saved nothing.
fn durable_fields(raw: &str, json: bool) -> Vec<(&'static str, serde_json::Value)> {
    if json {
        return DurableState::of_payload(raw, None)
            .map(|state| vec![("durable", serde_json::to_value(state).unwrap_or_default())])
            .unwrap_or_default();
    }
    let Some(state) = DurableState::of_payload(raw, Some(preview::ARGS_PREVIEW)) else {
        return Vec::new();
    };
    if let Some(why) = state.unreadable {
        return vec![("durable", why.into())];
    }
    let mut fields = Vec::new();
    if !state.checkpoint.is_null() {
        fields.push(("checkpoint", as_text(&state.checkpoint).into()));
    }
    for step in &state.steps {
        let line = format!("{}: {}", step.name, as_text(&step.value));
        fields.push(("step", line.into()));
    }
    fields.push(("sleeps", state.sleeps.into()));
    fields.push(("slices", state.slices.into()));
    fields
}

/// A value as one line: its JSON text, or a preview's text as it is.
fn as_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(cut) if preview::is_cut(value) => cut.clone(),
        other => other.to_string(),
    }
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
            ("reason", preview::error(reason).into()),
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
