//! `gator-worker queue ...`: set a queue's flow controls (pause, limit, shares, rates, aging,
//! order, windows) for the whole fleet, and show them ([`crate::cli::queue_show`]); see
//! [`gator_core::flow`].

use crate::cli::AdminError;
use clap::{ArgGroup, Subcommand};
use gator_core::Admin;
use gator_core::flow::{QueueOrdering, RateSpec, Windows};
use std::io::Write;
use std::time::Duration;

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
    /// Sets a fair key's weight (`fair reports acme 3`), or the weight of every unlisted key
    /// (`--default 2`).
    ///
    /// Jobs with fair keys (`.fair_key(tenant)`) are taken in weighted round-robin: a key of
    /// weight 3 starts three jobs for each job of a key of weight 1 while both wait.
    Fair {
        /// The queue.
        queue: String,
        /// The fair key (omit with --default).
        key: Option<String>,
        /// Its weight, 1 to 100.
        weight: Option<u8>,
        /// Set the default weight of unlisted keys instead: `--default 2`.
        #[arg(long, value_name = "WEIGHT", conflicts_with_all = ["key", "weight"])]
        default: Option<u8>,
        /// Remove the key's weight (or, with no key, the default weight): back to 1.
        #[arg(long, conflicts_with_all = ["weight", "default"])]
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

/// Runs `gator-worker queue ACTION`.
pub async fn run(
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
        QueueAction::Limit { queue, units, .. } => limit(admin, &queue, units, out).await?,
        QueueAction::Share {
            queue,
            key,
            percent,
            default,
            clear,
        } => share(admin, &queue, share_of(key, percent, default, clear)?, out).await?,
        QueueAction::Fair {
            queue,
            key,
            weight,
            default,
            clear,
        } => fair_weight(admin, &queue, share_of(key, weight, default, clear)?, out).await?,
        QueueAction::Rate {
            queue,
            rate,
            limiter,
            ..
        } => rate_limit(admin, &queue, rate, limiter, out).await?,
        QueueAction::Aging {
            queue, interval, ..
        } => aging(admin, &queue, interval, out).await?,
        QueueAction::Order { queue, order } => ordering(admin, &queue, &order, out).await?,
        QueueAction::Windows {
            queue, windows, tz, ..
        } => time_windows(admin, &queue, windows, tz, out).await?,
        QueueAction::Show { queue, json } => {
            crate::cli::queue_show::run(admin, &queue, json, out).await?
        }
    }
    Ok(())
}

/// `queue limit`: sets or removes the most units that run at once.
async fn limit(
    admin: &Admin,
    queue: &str,
    units: Option<u32>,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    admin.set_queue_limit(queue, units).await?;
    match units {
        Some(units) => writeln!(out, "{queue}: at most {units} units at once")?,
        None => writeln!(out, "{queue}: no concurrency limit")?,
    }
    Ok(())
}

/// Which key's share `queue share` (or weight, `queue fair`) sets (`None`: the default of
/// unlisted keys), and to what value (`None`: removed); or why the arguments do not say.
fn share_of(
    key: Option<String>,
    percent: Option<u8>,
    default: Option<u8>,
    clear: bool,
) -> Result<(Option<String>, Option<u8>), AdminError> {
    let percent = match (clear, default, percent) {
        (true, _, _) => None,
        (false, Some(p), _) | (false, None, Some(p)) => Some(p),
        (false, None, None) => {
            return Err(usage("give a value, `--default VALUE` or `--clear`"));
        }
    };
    let key = if default.is_some() { None } else { key };
    if !clear && default.is_none() && key.is_none() {
        return Err(usage("name the KEY, or use `--default VALUE`"));
    }
    Ok((key, percent))
}

/// `queue share`: sets or removes `key`'s share of the limit.
async fn share(
    admin: &Admin,
    queue: &str,
    (key, percent): (Option<String>, Option<u8>),
    out: &mut impl Write,
) -> Result<(), AdminError> {
    admin
        .set_queue_share(queue, key.as_deref(), percent)
        .await?;
    let whose = key.map_or("unlisted keys".to_owned(), |k| format!("key {k:?}"));
    match percent {
        Some(p) => writeln!(out, "{queue}: {whose} may use {p} % of the limit")?,
        None => writeln!(out, "{queue}: share of {whose} removed")?,
    }
    Ok(())
}

/// `queue fair`: sets or removes a fair key's weight.
async fn fair_weight(
    admin: &Admin,
    queue: &str,
    (key, weight): (Option<String>, Option<u8>),
    out: &mut impl Write,
) -> Result<(), AdminError> {
    admin
        .set_queue_fair_weight(queue, key.as_deref(), weight)
        .await?;
    let whose = key.map_or("unlisted keys".to_owned(), |k| format!("fair key {k:?}"));
    match weight {
        Some(w) => writeln!(out, "{queue}: {whose} weigh {w}")?,
        None => writeln!(out, "{queue}: weight of {whose} removed (1)")?,
    }
    Ok(())
}

/// `queue order`: how the queue orders the jobs that may start.
async fn ordering(
    admin: &Admin,
    queue: &str,
    order: &str,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let order: QueueOrdering = order.parse()?;
    admin.set_queue_order(queue, order).await?;
    writeln!(out, "{queue}: ordered by {order}")?;
    Ok(())
}

/// `queue rate`: sets or removes the queue's rate, or one of its named limiters.
async fn rate_limit(
    admin: &Admin,
    queue: &str,
    rate: Option<String>,
    limiter: Option<String>,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let rate = rate.map(|r| r.parse::<RateSpec>()).transpose()?;
    admin
        .set_queue_rate(queue, limiter.as_deref(), rate)
        .await?;
    let which = limiter.map_or("the queue's rate".to_owned(), |l| format!("limiter {l:?}"));
    match rate {
        Some(rate) => writeln!(out, "{queue}: {which} is {rate}")?,
        None => writeln!(out, "{queue}: {which} removed")?,
    }
    Ok(())
}

/// `queue aging`: sets or removes the interval per priority step.
async fn aging(
    admin: &Admin,
    queue: &str,
    interval: Option<String>,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let interval: Option<Duration> = interval
        .map(|text| {
            humantime::parse_duration(&text)
                .map_err(|e| usage(&format!("aging interval {text:?}: {e}")))
        })
        .transpose()?;
    admin.set_queue_aging(queue, interval).await?;
    match interval {
        Some(d) => writeln!(
            out,
            "{queue}: a waiting job gains one priority step per {}",
            humantime::format_duration(d)
        )?,
        None => writeln!(out, "{queue}: no aging")?,
    }
    Ok(())
}

/// `queue windows`: sets the daily windows (in `tz`), or removes them.
async fn time_windows(
    admin: &Admin,
    queue: &str,
    windows: Vec<String>,
    tz: Option<String>,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let windows = if windows.is_empty() {
        None
    } else {
        Some(Windows::parse(&windows, tz.as_deref())?)
    };
    admin.set_queue_windows(queue, windows.clone()).await?;
    match windows {
        Some(w) => writeln!(out, "{queue}: starts jobs only within {w}")?,
        None => writeln!(out, "{queue}: starts jobs at any time")?,
    }
    Ok(())
}

/// A command line that does not say what to set, as the error `queue` prints.
fn usage(reason: &str) -> AdminError {
    AdminError::Core(gator_core::Error::InvalidFlow {
        reason: reason.to_owned(),
    })
}
