//! `gator-worker queue ...` and `gator-worker limiter ...`: set a queue's flow controls (pause,
//! limit, shares, rates, aging, order, windows) for the whole fleet, show them, and manage the
//! rate limiters shared across queues (see [`gator_core::flow`]).

use crate::cli::admin::AdminError;
use clap::{ArgGroup, Args, Subcommand};
use gator_core::Admin;
use gator_core::flow::{QueueOrdering, RateSpec, Windows};
use gator_core::store::flow::FlowStatus;
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What `gator-worker queue` does.
#[derive(Debug, Subcommand)]
pub enum QueueAction {
    /// Pauses a queue for every worker: it keeps accepting jobs, running jobs finish, no job
    /// starts until `queue resume`.
    Pause {
        /// The queue.
        queue: String,
    },
    /// Resumes a paused queue: its jobs start again, in order.
    Resume {
        /// The queue.
        queue: String,
    },
    /// Deletes every job waiting in a queue (not the running, scheduled, retrying or dead ones).
    ///
    /// Each job goes with its status record and unique lock. On a queue under flow control each
    /// parked job is cancelled instead. Jobs pushed while it runs may stay.
    Clear {
        /// The queue.
        queue: String,
    },
    /// Sets the most units that run at once over the fleet (a job takes its cost), or clears it.
    #[command(group(ArgGroup::new("value").required(true).args(["units", "clear"])))]
    Limit {
        /// The queue.
        queue: String,
        /// Units, 1 or more.
        units: Option<u32>,
        /// Removes the limit.
        #[arg(long)]
        clear: bool,
    },
    /// Sets a limit key's share of the limit, in percent (`share partner east 40`), or the
    /// share of every unlisted key (`--default 30`).
    ///
    /// A key at its share waits while another key has jobs waiting; a key that runs nothing may
    /// always start one job; a key that is alone may borrow the idle shares.
    Share {
        /// The queue.
        queue: String,
        /// The limit key (omit with --default).
        key: Option<String>,
        /// Percent of the limit, 1 to 100.
        percent: Option<u8>,
        /// Set the default share of unlisted keys instead: `--default 30`.
        #[arg(long, value_name = "PERCENT", conflicts_with_all = ["key", "percent"])]
        default: Option<u8>,
        /// Remove the key's share (or, with no key, the default share).
        #[arg(long, conflicts_with_all = ["percent", "default"])]
        clear: bool,
    },
    /// Sets a rate limit: `rate mail 100/1s` for the whole queue, `--limiter email` for the jobs
    /// that name `email`; `100/1s burst 10` lets ten start at once after a quiet spell.
    #[command(group(ArgGroup::new("value").required(true).args(["rate", "clear"])))]
    Rate {
        /// The queue.
        queue: String,
        /// COUNT/INTERVAL, as `100/1s` or `5/2m burst 3`.
        rate: Option<String>,
        /// A named limiter of the queue instead of the queue's own.
        #[arg(long, value_name = "NAME")]
        limiter: Option<String>,
        /// Removes the limiter.
        #[arg(long)]
        clear: bool,
    },
    /// Ages waiting jobs: each gains one priority step per INTERVAL (`30s`), so none starves.
    #[command(group(ArgGroup::new("value").required(true).args(["interval", "clear"])))]
    Aging {
        /// The queue.
        queue: String,
        /// How long a job waits per step, as `30s` or `500ms`.
        interval: Option<String>,
        /// Turns aging off.
        #[arg(long)]
        clear: bool,
    },
    /// Orders the jobs that may start by `priority` (then due time; the default) or by `due`
    /// time (priority only breaks ties).
    Order {
        /// The queue.
        queue: String,
        /// `priority` or `due`.
        order: String,
    },
    /// Sets the daily time windows the queue starts jobs in: `windows batch 22:00-06:00 --tz
    /// Europe/Berlin`.
    #[command(group(ArgGroup::new("value").required(true).args(["windows", "clear"])))]
    Windows {
        /// The queue.
        queue: String,
        /// Windows as HH:MM-HH:MM (an end before the start crosses midnight).
        windows: Vec<String>,
        /// Their IANA time zone (default UTC).
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// Removes the windows: jobs start at any time.
        #[arg(long, conflicts_with_all = ["windows", "tz"])]
        clear: bool,
    },
    /// Shows a queue's flow controls: paused, limit and units in use by key, shares, parked jobs
    /// by key, each rate limiter's next start, aging, order, windows.
    Show {
        /// The queue.
        queue: String,
        /// Prints JSON instead.
        #[arg(long)]
        json: bool,
    },
}

/// What `gator-worker limiter` does.
#[derive(Debug, Subcommand)]
pub enum LimiterAction {
    /// Sets a rate limiter shared by every queue whose jobs name it (and that defines no
    /// limiter of that name itself): `limiter set email 100/1s`.
    Set {
        /// The limiter's name.
        name: String,
        /// COUNT/INTERVAL, as `100/1s` or `100/1s burst 10`.
        rate: String,
    },
    /// Removes a shared limiter: its jobs start without it.
    Clear {
        /// The limiter's name.
        name: String,
    },
    /// Lists the shared limiters with their rates and next starts.
    List(JsonFlag),
}

/// `--json`.
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Prints JSON instead.
    #[arg(long)]
    pub json: bool,
}

/// Runs `gator-worker queue ACTION`.
pub async fn run_queue(
    admin: &Admin,
    action: QueueAction,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    match action {
        QueueAction::Pause { queue } => {
            admin.pause_queue(&queue).await?;
            writeln!(
                out,
                "{queue}: paused for every worker (running jobs finish)"
            )?;
        }
        QueueAction::Resume { queue } => {
            admin.resume_queue(&queue).await?;
            writeln!(out, "{queue}: resumed")?;
        }
        QueueAction::Clear { queue } => {
            let cleared = admin.clear_queue(&queue).await?;
            let jobs = if cleared == 1 { "job" } else { "jobs" };
            writeln!(out, "{queue}: cleared {cleared} waiting {jobs}")?;
        }
        QueueAction::Limit { queue, units, .. } => {
            admin.set_queue_limit(&queue, units).await?;
            match units {
                Some(units) => writeln!(out, "{queue}: at most {units} units at once")?,
                None => writeln!(out, "{queue}: no concurrency limit")?,
            }
        }
        QueueAction::Share {
            queue,
            key,
            percent,
            default,
            clear,
        } => {
            let percent = match (clear, default, percent) {
                (true, _, _) => None,
                (false, Some(p), _) | (false, None, Some(p)) => Some(p),
                (false, None, None) => {
                    return Err(usage("give a PERCENT, `--default PERCENT` or `--clear`"));
                }
            };
            let key = if default.is_some() { None } else { key };
            if !clear && default.is_none() && key.is_none() {
                return Err(usage("name the limit KEY, or use `--default PERCENT`"));
            }
            admin
                .set_queue_share(&queue, key.as_deref(), percent)
                .await?;
            let whose = key.map_or("unlisted keys".to_owned(), |k| format!("key {k:?}"));
            match percent {
                Some(p) => writeln!(out, "{queue}: {whose} may use {p} % of the limit")?,
                None => writeln!(out, "{queue}: share of {whose} removed")?,
            }
        }
        QueueAction::Rate {
            queue,
            rate,
            limiter,
            ..
        } => {
            let rate = rate.map(|r| r.parse::<RateSpec>()).transpose()?;
            admin
                .set_queue_rate(&queue, limiter.as_deref(), rate)
                .await?;
            let which = limiter.map_or("the queue's rate".to_owned(), |l| format!("limiter {l:?}"));
            match rate {
                Some(rate) => writeln!(out, "{queue}: {which} is {rate}")?,
                None => writeln!(out, "{queue}: {which} removed")?,
            }
        }
        QueueAction::Aging {
            queue, interval, ..
        } => {
            let interval = interval
                .map(|text| {
                    humantime::parse_duration(&text)
                        .map_err(|e| usage(&format!("aging interval {text:?}: {e}")))
                })
                .transpose()?;
            admin.set_queue_aging(&queue, interval).await?;
            match interval {
                Some(d) => writeln!(
                    out,
                    "{queue}: a waiting job gains one priority step per {}",
                    humantime::format_duration(d)
                )?,
                None => writeln!(out, "{queue}: no aging")?,
            }
        }
        QueueAction::Order { queue, order } => {
            let order: QueueOrdering = order.parse()?;
            admin.set_queue_order(&queue, order).await?;
            writeln!(out, "{queue}: ordered by {order}")?;
        }
        QueueAction::Windows {
            queue, windows, tz, ..
        } => {
            let windows = if windows.is_empty() {
                None
            } else {
                Some(Windows::parse(&windows, tz.as_deref())?)
            };
            admin.set_queue_windows(&queue, windows.clone()).await?;
            match windows {
                Some(w) => writeln!(out, "{queue}: starts jobs only within {w}")?,
                None => writeln!(out, "{queue}: starts jobs at any time")?,
            }
        }
        QueueAction::Show { queue, json } => {
            let status = admin.flow_status(&queue).await?;
            if json {
                let text = serde_json::to_string_pretty(&status)
                    .map_err(|e| AdminError::Core(gator_core::Error::Json(e)))?;
                writeln!(out, "{text}")?;
            } else {
                show(&status, out)?;
            }
        }
    }
    Ok(())
}

/// Runs `gator-worker limiter ACTION`.
pub async fn run_limiter(
    admin: &Admin,
    action: LimiterAction,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    match action {
        LimiterAction::Set { name, rate } => {
            let rate: RateSpec = rate.parse()?;
            admin.set_shared_rate(&name, Some(rate)).await?;
            writeln!(
                out,
                "limiter {name:?}: {rate}, shared by every queue whose jobs name it"
            )?;
        }
        LimiterAction::Clear { name } => {
            admin.set_shared_rate(&name, None).await?;
            writeln!(out, "limiter {name:?} removed")?;
        }
        LimiterAction::List(JsonFlag { json }) => {
            let limiters = admin.shared_limiters().await?;
            if json {
                let text = serde_json::to_string_pretty(&limiters)
                    .map_err(|e| AdminError::Core(gator_core::Error::Json(e)))?;
                writeln!(out, "{text}")?;
            } else {
                for limiter in &limiters {
                    writeln!(
                        out,
                        "{}  {}  next start {}",
                        limiter.name,
                        limiter.rate,
                        next_start(limiter.next_allowed_ms)
                    )?;
                }
                writeln!(out, "{} shared limiters", limiters.len())?;
            }
        }
    }
    Ok(())
}

fn show(status: &FlowStatus, out: &mut impl Write) -> std::io::Result<()> {
    let queue = &status.queue;
    if !status.controlled {
        return writeln!(out, "{queue}: plain (no flow control)");
    }
    writeln!(
        out,
        "{queue}: {}",
        if status.paused { "PAUSED" } else { "running" }
    )?;
    match status.limit {
        Some(limit) => writeln!(
            out,
            "  limit: {} of {limit} units in use",
            status.units_in_use
        )?,
        None => writeln!(out, "  limit: none")?,
    }
    for (key, units) in &status.units_by_key {
        writeln!(out, "    key {key:?}: {units} units")?;
    }
    for (key, percent) in &status.shares {
        writeln!(out, "  share: key {key:?} {percent} %")?;
    }
    if let Some(percent) = status.default_share {
        writeln!(out, "  share: unlisted keys {percent} %")?;
    }
    for parked in &status.parked {
        let rate = parked
            .rate
            .as_ref()
            .map(|r| format!(", limiter {r:?}"))
            .unwrap_or_default();
        let overlap = parked
            .overlap
            .as_ref()
            .map(|o| format!(", overlap key {o:?}"))
            .unwrap_or_default();
        writeln!(
            out,
            "  parked: key {:?}{rate}{overlap}: {} jobs ({})",
            parked.key, parked.jobs, parked.state
        )?;
    }
    if status.critical_waiting > 0 {
        writeln!(out, "  critical jobs waiting: {}", status.critical_waiting)?;
    }
    if status.backlog > 0 {
        writeln!(out, "  backlog still to park: {}", status.backlog)?;
    }
    for rate in &status.rates {
        let name = if rate.name.is_empty() {
            "the queue's".to_owned()
        } else {
            format!("limiter {:?}", rate.name)
        };
        writeln!(
            out,
            "  rate: {name} {}, next start {}",
            rate.rate,
            next_start(rate.next_allowed_ms)
        )?;
    }
    if let Some(aging) = status.aging {
        writeln!(
            out,
            "  aging: one priority step per {}",
            humantime::format_duration(aging)
        )?;
    }
    writeln!(out, "  order: {}", status.order)?;
    if let Some(windows) = &status.windows {
        writeln!(out, "  windows: {windows}")?;
    }
    Ok(())
}

/// "now", or the time and how far off it is.
fn next_start(at_ms: Option<u64>) -> String {
    let Some(at_ms) = at_ms else {
        return "now".to_owned();
    };
    let at = UNIX_EPOCH + Duration::from_millis(at_ms);
    let wait = at
        .duration_since(SystemTime::now())
        .map(|d| format!(" (in {} ms)", d.as_millis()))
        .unwrap_or_default();
    format!("{}{wait}", humantime::format_rfc3339_millis(at))
}

fn usage(reason: &str) -> AdminError {
    AdminError::Core(gator_core::Error::InvalidFlow {
        reason: reason.to_owned(),
    })
}
