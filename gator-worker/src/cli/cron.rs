//! `gator-worker cron list|pause|resume|run|remove`: the periodic jobs stored in Redis (see
//! [`gator_core::cron`]), for every worker at once.

use crate::cli::{AdminError, table};
use clap::Subcommand;
use gator_core::Admin;
use gator_core::admin::Periodic;
use serde_json::json;
use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

/// What `gator-worker cron` does.
#[derive(Debug, Subcommand)]
pub enum CronAction {
    /// Lists every periodic job: its schedule and zone, its job and queue, whether it is paused,
    /// its last tick and its next one.
    List {
        /// Print one JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Pauses a periodic job: no tick fires until it is resumed.
    Pause {
        /// The entry's name (a job declared with `#[job(cron = ..)]`: its wire name).
        name: String,
    },
    /// Resumes a paused periodic job: it fires its next tick, not the ones it missed.
    Resume {
        /// The entry's name.
        name: String,
    },
    /// Enqueues a periodic job's job once now, paused or not; its schedule is unchanged.
    Run {
        /// The entry's name.
        name: String,
    },
    /// Removes a periodic job. One declared in code comes back when a worker that declares it
    /// starts.
    Remove {
        /// The entry's name.
        name: String,
    },
}

/// Runs `action`, writing what it found or did to `out`.
pub async fn run(
    admin: &Admin,
    action: CronAction,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    match action {
        CronAction::List { json } => list(admin, json, out).await,
        CronAction::Pause { name } => {
            admin.pause_periodic(&name).await?;
            writeln!(out, "{name}: paused")?;
            Ok(())
        }
        CronAction::Resume { name } => {
            admin.resume_periodic(&name).await?;
            writeln!(out, "{name}: resumed; it fires its next tick")?;
            Ok(())
        }
        CronAction::Run { name } => {
            let jid = admin.run_periodic_now(&name).await?;
            writeln!(out, "{name}: enqueued {jid}")?;
            Ok(())
        }
        CronAction::Remove { name } => {
            if !admin.remove_periodic(&name).await? {
                return Err(gator_core::Error::UnknownPeriodic { name }.into());
            }
            writeln!(out, "{name}: removed")?;
            Ok(())
        }
    }
}

async fn list(admin: &Admin, as_json: bool, out: &mut impl Write) -> Result<(), AdminError> {
    let entries = admin.periodic_entries().await?;
    if as_json {
        let all: Vec<_> = entries.iter().map(to_json).collect();
        writeln!(out, "{}", table::json_text(&all, false)?)?;
        return Ok(());
    }
    if entries.is_empty() {
        writeln!(out, "no periodic jobs")?;
        return Ok(());
    }
    // A table under a header, like every other listing.
    let mut rows = table::new(&[
        "name", "cron", "tz", "job", "queue", "state", "last", "next",
    ]);
    for p in &entries {
        let e = &p.entry;
        let state = if p.paused { "paused" } else { "active" };
        table::add_row(
            &mut rows,
            [
                e.name.clone(),
                e.cron.clone(),
                e.tz.clone(),
                e.job.clone(),
                e.queue.clone(),
                state.to_owned(),
                p.last_fired.map_or("-".to_owned(), time),
                p.next.filter(|_| !p.paused).map_or("-".to_owned(), time),
            ],
        );
    }
    table::print(out, &rows)?;
    Ok(())
}

fn to_json(p: &Periodic) -> serde_json::Value {
    let e = &p.entry;
    json!({
        "name": e.name,
        "cron": e.cron,
        "tz": e.tz,
        "job": e.job,
        "queue": e.queue,
        "args": e.args,
        "source": e.source,
        "paused": p.paused,
        "last_fired": p.last_fired,
        "next": p.next,
    })
}

/// A time in ms since the epoch, as RFC 3339 (UTC).
fn time(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
