//! `gator-worker dead|retry|scheduled list|run|delete ...`: inspect and repair a queue's sets
//! through [`gator_core::admin`].

use crate::cli::{AdminError, table};
use clap::{ArgGroup, Args, Subcommand};
use gator_core::{Admin, SetEntry, SetKind};
use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

/// `list` cuts error messages and unparsed text to this many characters, so that every entry
/// stays on one line.
pub(crate) const MAX_TEXT_CHARS: usize = 120;

/// What `gator-worker dead` does.
#[derive(Debug, Subcommand)]
pub enum DeadAction {
    /// Lists dead jobs, oldest first: time of death, queue, jid, job, attempt, error.
    List(ListArgs),
    /// Puts dead jobs back on their queue with attempt reset to 0.
    ///
    /// Each job goes to the tail of its queue with every retry available again, and leaves the
    /// dead set in the same atomic step, so two admins retrying it at once enqueue it once.
    /// Entries that are not payloads stay in the dead set: no worker could run them.
    #[command(visible_alias = "run")]
    Retry(Target),
    /// Deletes dead jobs for good.
    Delete(Target),
}

/// What `gator-worker retry` and `gator-worker scheduled` do.
#[derive(Debug, Subcommand)]
pub enum SetAction {
    /// Lists the jobs, soonest due first: due time, queue, jid, job, attempt, last error.
    List(ListArgs),
    /// Moves jobs to their queue now instead of at their due time.
    ///
    /// Each job goes to the tail of its queue and keeps its attempt count, so if it fails
    /// again it goes on along the backoff curve. It leaves the set in the same atomic step, so
    /// a worker promoting it at the same moment cannot enqueue it twice.
    Run(Target),
    /// Deletes jobs for good: they will not run.
    Delete(Target),
}

/// The arguments of `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this queue's set (default: every known queue).
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
    /// Show at most this many entries (1 to 1000), oldest (or soonest due) first.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: u16,
    /// Start where a listing before stopped: the cursor it printed.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,
    /// Print JSON instead of a table: the entries (payloads as stored) and the total.
    #[arg(long)]
    pub json: bool,
}

/// Which entries `retry`, `run` and `delete` act on: one jid, or `--all`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("which").required(true).args(["jid", "all"])))]
pub struct Target {
    /// The job's jid, as `list` prints it.
    pub jid: Option<String>,
    /// Every entry of the set (of --queue, or of every known queue).
    #[arg(long)]
    pub all: bool,
    /// Only this queue's set (default: every known queue).
    #[arg(long, value_name = "QUEUE")]
    pub queue: Option<String>,
}

/// Runs `action` on the `kind` set, writing what it found or did to `out`.
pub async fn run(
    admin: &Admin,
    kind: SetKind,
    action: SetAction,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    match action {
        SetAction::List(args) => list(admin, kind, args, out).await,
        SetAction::Run(target) => run_now(admin, kind, target, out).await,
        SetAction::Delete(target) => delete(admin, kind, target, out).await,
    }
}

impl From<DeadAction> for SetAction {
    /// The dead set's `retry` is the other sets' `run`; `run_entry` resets the attempt.
    fn from(action: DeadAction) -> SetAction {
        match action {
            DeadAction::List(args) => SetAction::List(args),
            DeadAction::Retry(target) => SetAction::Run(target),
            DeadAction::Delete(target) => SetAction::Delete(target),
        }
    }
}

async fn list(
    admin: &Admin,
    kind: SetKind,
    args: ListArgs,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let queue = args.queue.as_deref();
    let page = admin
        .set_page(kind, queue, args.cursor.as_deref(), usize::from(args.limit))
        .await?;
    let (entries, next) = (page.entries, page.next_cursor);
    let total = admin.set_len(kind, queue).await?;
    if args.json {
        let entries: Vec<serde_json::Value> = entries.iter().map(entry_json).collect();
        let value = serde_json::json!({"set": kind.as_str(), "total": total, "entries": entries, "next_cursor": next});
        return Ok(table::print_json(out, &value)?);
    }
    if !entries.is_empty() {
        let time = match kind {
            SetKind::Dead => "died",
            SetKind::Retry | SetKind::Scheduled => "due",
        };
        let mut rows = table::new(&[time, "queue", "jid", "job", "attempt", "error"]);
        for entry in &entries {
            table::add_row(&mut rows, entry_row(entry));
        }
        table::print(out, &rows)?;
    }
    let scope = every(queue);
    match next {
        None if args.cursor.is_none() => writeln!(
            out,
            "{} in the {kind} set of {scope}",
            count(total, "entry", "entries")
        )?,
        None => writeln!(
            out,
            "{} shown, the last of {total} in the {kind} set of {scope}",
            entries.len()
        )?,
        Some(next) => writeln!(
            out,
            "{} of {total} entries in the {kind} set of {scope} shown; the next ones: --cursor {next}",
            entries.len()
        )?,
    }
    Ok(())
}

/// An entry as `list --json` prints it: where and when, and the payload as stored (parsed if
/// it is JSON, else the text).
fn entry_json(entry: &SetEntry) -> serde_json::Value {
    let stored = serde_json::from_str(&entry.raw)
        .unwrap_or_else(|_| serde_json::Value::String(entry.raw.clone()));
    serde_json::json!({
        "queue": entry.queue,
        "score_ms": entry.score_ms,
        "jid": entry.jid(),
        "runnable": entry.is_runnable(),
        "payload": stored,
    })
}

/// `run` (and the dead set's `retry`): one entry or `--all`, moved to their queues now.
async fn run_now(
    admin: &Admin,
    kind: SetKind,
    target: Target,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let queue = target.queue.as_deref();
    let how = match kind {
        SetKind::Dead => "attempt reset to 0",
        SetKind::Retry | SetKind::Scheduled => "attempt count kept",
    };
    let Some(jid) = target.jid else {
        let moved = admin.run_all_now(kind, queue).await?;
        let jobs = count(moved, "job", "jobs");
        writeln!(
            out,
            "moved {jobs} from the {kind} set of {} to their queues ({how})",
            every(queue)
        )?;
        let left = admin.set_len(kind, queue).await?;
        if left > 0 {
            writeln!(
                out,
                "{} still in the {kind} set: entries that are not payloads are never moved \
                 (see `{kind} list`), and jobs added meanwhile may be left",
                count(left, "entry", "entries")
            )?;
        }
        return Ok(());
    };
    let entry = find(admin, kind, queue, &jid).await?;
    if !entry.is_runnable() {
        return Err(AdminError::NotRunnable {
            kind,
            jid,
            queue: entry.queue,
        });
    }
    if !admin.run_entry(&entry).await? {
        return Err(AdminError::Gone {
            kind,
            jid,
            queue: entry.queue,
        });
    }
    writeln!(
        out,
        "moved job {jid} to the tail of queue {:?} ({how})",
        entry.queue
    )?;
    Ok(())
}

async fn delete(
    admin: &Admin,
    kind: SetKind,
    target: Target,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let queue = target.queue.as_deref();
    let Some(jid) = target.jid else {
        let deleted = admin.clear_set(kind, queue).await?;
        let entries = count(deleted, "entry", "entries");
        writeln!(
            out,
            "deleted {entries} from the {kind} set of {}",
            every(queue)
        )?;
        return Ok(());
    };
    let entry = find(admin, kind, queue, &jid).await?;
    if !admin.delete_entry(&entry).await? {
        return Err(AdminError::Gone {
            kind,
            jid,
            queue: entry.queue,
        });
    }
    writeln!(
        out,
        "deleted job {jid} from the {kind} set of queue {:?}",
        entry.queue
    )?;
    Ok(())
}

async fn find(
    admin: &Admin,
    kind: SetKind,
    queue: Option<&str>,
    jid: &str,
) -> Result<SetEntry, AdminError> {
    admin
        .find_job(kind, queue, jid)
        .await?
        .ok_or_else(|| AdminError::NoSuchJob {
            kind,
            jid: jid.to_owned(),
            scope: scope(queue),
        })
}

/// Where a jid was looked for: `queue "mail"` or `any known queue`.
fn scope(queue: Option<&str>) -> String {
    match queue {
        Some(queue) => format!("queue {queue:?}"),
        None => "any known queue".to_owned(),
    }
}

/// What `list` and `--all` covered: `queue "mail"` or `every known queue`.
fn every(queue: Option<&str>) -> String {
    match queue {
        Some(queue) => format!("queue {queue:?}"),
        None => "every known queue".to_owned(),
    }
}

/// One row: time, queue, jid, job, attempt, and the error, or for an entry that is not a
/// payload, its text; as stored, to be escaped by [`table::add_row`].
fn entry_row(entry: &SetEntry) -> [String; 6] {
    const NOT_A_PAYLOAD: &str = "(not a payload)";
    let time = humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(entry.score_ms));
    let (jid, job, attempt) = match &entry.payload {
        Some(p) if !p.job.is_empty() => (p.jid.clone(), p.job.clone(), p.attempt.to_string()),
        Some(p) => (
            p.jid.clone(),
            NOT_A_PAYLOAD.to_owned(),
            p.attempt.to_string(),
        ),
        None => ("-".to_owned(), NOT_A_PAYLOAD.to_owned(), "-".to_owned()),
    };
    let error = match (
        entry.payload.as_ref().and_then(|p| p.error.as_deref()),
        entry.unparsed_text(),
    ) {
        (Some(error), Some(raw)) => format!("{}; raw: {}", one_line(error), one_line(raw)),
        (Some(error), None) => one_line(error),
        (None, Some(raw)) => format!("raw: {}", one_line(raw)),
        (None, None) => String::new(),
    };
    [
        time.to_string(),
        entry.queue.clone(),
        jid,
        job,
        attempt,
        error,
    ]
}

/// `text` cut to [`MAX_TEXT_CHARS`] characters with a trailing `…`; escaped when the row is
/// added ([`table::add_row`]), so that a line break shows as `\n` and the entry keeps one line.
pub(crate) fn one_line(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// `1 entry`, `2 entries`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gator_core::Payload;

    fn entry(raw: &str) -> SetEntry {
        SetEntry {
            kind: SetKind::Dead,
            queue: "mail".into(),
            score_ms: 1_732_300_000_000,
            score: 1_732_300_000_000.0,
            raw: raw.into(),
            payload: Payload::from_json(raw).ok(),
        }
    }

    #[test]
    fn a_job_row_has_time_queue_jid_job_attempt_and_error() {
        let row = entry_row(&entry(
            r#"{"jid":"j1","job":"send_email","args":[],"queue":"mail","created_at":1,"enqueued_at":1,"attempt":3,"error":"smtp\ndown"}"#,
        ));
        assert_eq!(
            row,
            [
                "2024-11-22T18:26:40.000Z",
                "mail",
                "j1",
                "send_email",
                "3",
                "smtp\ndown"
            ]
        );
    }

    #[test]
    fn text_that_is_not_a_payload_is_shown_raw() {
        let row = entry_row(&entry("{oops"));
        assert_eq!(row[2..], ["-", "(not a payload)", "-", "raw: {oops"]);
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary() {
        let cut = one_line(&"é".repeat(300));
        assert_eq!(cut.chars().count(), MAX_TEXT_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
