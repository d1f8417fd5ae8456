//! The admin subcommands, `gator-worker dead|retry|scheduled list|run|delete ...`: inspect and
//! repair a queue's sets through [`gator_core::admin`] instead of running the worker (and
//! `gator-worker shards`, in `shards_admin`; `gator-worker queue|limiter`, in `flow_admin`;
//! `gator-worker cron`, in `cron_admin`).
//! Results
//! go to stdout, errors to stderr with exit code 1.

use clap::{ArgGroup, Args, Subcommand};
use gator_core::{Admin, Client, SetEntry, SetKind};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

/// `list` cuts error messages and unparsed text to this many characters, so that every entry
/// stays on one line.
const MAX_TEXT_CHARS: usize = 120;

/// A subcommand that looks into or repairs a set instead of running the worker.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Jobs that will not run again: list them, retry them, delete them.
    #[command(
        long_about = "Jobs that will not run again (retries used up, discarded, or text that is \
        not a payload): list them, retry them with attempt reset to 0, or delete them.\n\n\
        Without --queue, every known queue is searched."
    )]
    Dead {
        /// What to do with the dead set.
        #[command(subcommand)]
        action: DeadAction,
    },
    /// Failed jobs waiting for their next attempt: list them, run them now, delete them.
    #[command(
        long_about = "Failed jobs waiting for their next attempt: list them, run them now \
        (they keep their attempt count), or delete them.\n\n\
        Without --queue, every known queue is searched."
    )]
    Retry {
        /// What to do with the retry set.
        #[command(subcommand)]
        action: SetAction,
    },
    /// Jobs dispatched to run later: list them, run them now, delete them.
    #[command(
        long_about = "Jobs dispatched to run later (dispatch_at, dispatch_in): list them, run \
        them now, or delete them.\n\nWithout --queue, every known queue is searched."
    )]
    Scheduled {
        /// What to do with the scheduled set.
        #[command(subcommand)]
        action: SetAction,
    },
    /// Show or set how many shards a queue is split into.
    #[command(
        long_about = "Show or set how many shards a queue is split into: `shards` lists the \
        sharded queues, `shards default` shows one, `shards default 8` splits `default` into \
        `default#0` … `default#7`, each its own hash tag (so a cluster spreads them over its \
        masters). The count is kept in Redis; producers pick it up within 5 s, workers on their \
        next poll. Jobs already queued stay on their lists and are still drained; while old and \
        new lists are drained side by side, jobs of one shard key may run out of order."
    )]
    Shards(crate::cli::shards::ShardsArgs),
    /// A queue's controls: pause, resume, clear, limit, share, rate, aging, order, windows, show.
    #[command(
        long_about = "Flow control of a queue, for every worker at once (README, \"Flow \
        control\"): `queue pause mail`, `queue resume mail`, `queue clear mail`, `queue limit partner 10`, `queue \
        share partner east 40`, `queue rate mail 100/1s [--limiter email]`, `queue aging mail \
        30s`, `queue order mail due`, `queue windows batch 22:00-06:00 --tz Europe/Berlin`, \
        `queue show partner [--json]`. The settings live in Redis; a queue given one is under \
        flow control from then on."
    )]
    Queue {
        /// What to do with the queue.
        #[command(subcommand)]
        action: crate::cli::flow::QueueAction,
    },
    /// One job by its jid: its status, attempts, last error and result.
    #[command(
        long_about = "One job by its jid: `job show JID [--json]` prints its status (queued, \
        scheduled, running, retrying, dead, done or unknown), its queue, its attempts, its \
        last error and the result it returned. Every known queue is searched."
    )]
    Job {
        /// What to do with the job.
        #[command(subcommand)]
        action: crate::cli::job::JobAction,
    },
    /// Periodic jobs: list, pause, resume, run now, remove.
    #[command(
        long_about = "Periodic jobs (README, \"Cron and periodic jobs\"), for every worker at \
        once: `cron list [--json]` shows each entry's schedule, job, queue, state, last and next \
        tick; `cron pause NAME` and `cron resume NAME` stop and restart its ticks (resumed, it \
        waits for its next tick); `cron run NAME` enqueues its job once now; `cron remove NAME` \
        deletes it (one declared in code comes back when a worker that declares it starts)."
    )]
    Cron {
        /// What to do with the periodic jobs.
        #[command(subcommand)]
        action: crate::cli::cron::CronAction,
    },
    /// Totals, the last hour, day and week, and the Redis server.
    #[command(
        long_about = "Totals over every queue (processed and failed, all time; enqueued, busy, \
        scheduled, retries, dead), processed and failed over the last hour, day and week (from \
        the per-minute history workers keep in Redis), and the Redis server's version, memory \
        and clients. `--json` for JSON."
    )]
    Stats(crate::cli::flow::JsonFlag),
    /// Every queue: size, latency, busy, scheduled, retries, dead, paused, limits, parked.
    #[command(
        long_about = "One row per known queue (a shard is its own row): jobs waiting, the age of \
        the oldest one (latency), jobs running, scheduled, retrying and dead, whether it is paused \
        or under flow control, its limit (units in use/limit), parked jobs, and processed and \
        failed all time. `--json` for JSON."
    )]
    Queues(crate::cli::flow::JsonFlag),
    /// Live worker processes and the jobs each is running.
    #[command(
        long_about = "One row per live worker process (host, pid, queues, busy/concurrency, the \
        age of its last heartbeat, its uptime), then every job they are running, with how long it \
        has run. `--json` for JSON."
    )]
    Processes(crate::cli::flow::JsonFlag),
    /// Rate limiters shared across queues: set, clear, list.
    #[command(
        long_about = "Rate limiters shared across queues: `limiter set email 100/1s` limits \
        every job that names `email` (`#[job(rate = \"email\")]`), on every queue that defines \
        no limiter of that name itself; each start costs one more round trip, to the limiter's \
        node on a cluster. `limiter clear email`, `limiter list [--json]`."
    )]
    Limiter {
        /// What to do with the shared limiters.
        #[command(subcommand)]
        action: crate::cli::flow::LimiterAction,
    },
}

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

/// Why an admin command failed; printed to stderr.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Redis could not be reached (the error names the URL, its password redacted), or a bad
    /// queue name.
    #[error(transparent)]
    Core(#[from] gator_core::Error),
    /// No entry with that jid.
    #[error("no job {jid:?} in the {kind} set of {scope}")]
    NoSuchJob {
        /// The set searched.
        kind: SetKind,
        /// The jid asked for.
        jid: String,
        /// `queue "q"` or `any known queue`.
        scope: String,
    },
    /// No job with that jid in any known queue (never dispatched, deleted, or finished longer
    /// ago than the retention).
    #[error("no job {jid:?} in any known queue")]
    UnknownJob {
        /// The jid asked for.
        jid: String,
    },
    /// The job cannot be cancelled: it has finished.
    #[error("{reason}")]
    NotCancellable {
        /// Why.
        reason: String,
    },
    /// The entry exists but no worker could run it.
    #[error(
        "job {jid:?} in the {kind} set of queue {queue:?} is not a payload a worker could run, \
        so it stays; see it with `{kind} list --queue {queue}`, remove it with `{kind} delete {jid}`"
    )]
    NotRunnable {
        /// The set it is in.
        kind: SetKind,
        /// Its jid.
        jid: String,
        /// Its queue.
        queue: String,
    },
    /// The entry went between the lookup and the action: a worker promoted it, or another
    /// admin moved or deleted it.
    #[error(
        "job {jid:?} left the {kind} set of queue {queue:?} meanwhile (a worker or another admin moved or deleted it)"
    )]
    Gone {
        /// The set it was in.
        kind: SetKind,
        /// Its jid.
        jid: String,
        /// Its queue.
        queue: String,
    },
    /// Writing to stdout failed.
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

/// Runs `command` against the Redis at `redis_url` under `namespace` (with `tls` for a
/// `rediss://` URL): prints the results to
/// stdout, or the error to stderr, and returns the exit code. Never starts the worker.
pub fn main(
    command: AdminCommand,
    redis_url: &str,
    namespace: &str,
    tls: gator_core::TlsFiles,
    cluster: bool,
) -> ExitCode {
    let Some(runtime) = crate::start_runtime(tokio::runtime::Builder::new_current_thread()) else {
        return ExitCode::FAILURE;
    };
    let result = runtime.block_on(async {
        let client = Client::builder(redis_url)
            .namespace(namespace)
            .tls(tls)
            .cluster(cluster)
            .connect()
            .await
            .map_err(AdminError::Core)?;
        command
            .run(&Admin::new(client), &mut std::io::stdout())
            .await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gator-worker: {e}");
            ExitCode::FAILURE
        }
    }
}

impl AdminCommand {
    /// Runs the command with `client`, writing what it found or did to `out`.
    pub async fn run(self, admin: &Admin, out: &mut impl Write) -> Result<(), AdminError> {
        let (kind, action) = match self {
            AdminCommand::Dead { action } => (SetKind::Dead, action.into()),
            AdminCommand::Retry { action } => (SetKind::Retry, action),
            AdminCommand::Scheduled { action } => (SetKind::Scheduled, action),
            AdminCommand::Shards(args) => return crate::cli::shards::run(admin, args, out).await,
            AdminCommand::Queue { action } => {
                return crate::cli::flow::run_queue(admin, action, out).await;
            }
            AdminCommand::Limiter { action } => {
                return crate::cli::flow::run_limiter(admin, action, out).await;
            }
            AdminCommand::Job { action } => {
                return crate::cli::job::run(admin, action, out).await;
            }
            AdminCommand::Cron { action } => {
                return crate::cli::cron::run(admin, action, out).await;
            }
            AdminCommand::Stats(args) => return crate::cli::fleet::stats(admin, args, out).await,
            AdminCommand::Queues(args) => {
                return crate::cli::fleet::queues(admin, args, out).await;
            }
            AdminCommand::Processes(args) => {
                return crate::cli::fleet::processes(admin, args, out).await;
            }
        };
        match action {
            SetAction::List(args) => list(admin, kind, args, out).await,
            SetAction::Run(target) => run(admin, kind, target, out).await,
            SetAction::Delete(target) => delete(admin, kind, target, out).await,
        }
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
        return Ok(crate::cli::table::print_json(out, &value)?);
    }
    if !entries.is_empty() {
        let time = match kind {
            SetKind::Dead => "died",
            SetKind::Retry | SetKind::Scheduled => "due",
        };
        let mut rows = crate::cli::table::new(&[time, "queue", "jid", "job", "attempt", "error"]);
        for entry in &entries {
            rows.add_row(entry_row(entry));
        }
        crate::cli::table::print(out, &rows)?;
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

async fn run(
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
/// payload, its text.
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

/// `text` with control characters (line breaks) escaped, cut to [`MAX_TEXT_CHARS`]
/// characters with a trailing `…`.
fn one_line(text: &str) -> String {
    let mut line = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_TEXT_CHARS {
            line.push('…');
            break;
        }
        if c.is_control() {
            line.extend(c.escape_default());
        } else {
            line.push(c);
        }
    }
    line
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
                "smtp\\ndown"
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
