//! `gator-worker jobs [--json]`: the job catalogue (every job a live or recent worker published,
//! its queue, its options and which live workers run it); and `gator-worker enqueue JOB [ARGS]`:
//! a dispatch by wire name, with the catalogue's options, as the HTTP API makes one.

use crate::cli::{AdminError, JsonFlag, table};
use clap::Args;
use gator_core::Admin;
use gator_core::catalogue::{Definition, Known, Overlap};
use std::io::Write;
use std::time::Duration;

/// `gator-worker enqueue`.
#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// The job's wire name.
    pub job: String,
    /// Its arguments, a JSON array (one element per parameter of the job fn).
    #[arg(default_value = "[]")]
    pub args: String,
    /// The queue, instead of the one the catalogue names.
    #[arg(long)]
    pub queue: Option<String>,
    /// Run it after this long (`30s`, `5m`) instead of now.
    #[arg(long = "in", value_parser = humantime::parse_duration)]
    pub delay: Option<Duration>,
    /// Expire it if it has not started this long after now, on Redis's clock (`10m`): it
    /// then never runs, and ends `expired` in the dead set.
    #[arg(long = "expires-in", value_parser = gator_core::expiry::parse_delay)]
    pub expires_in: Option<Duration>,
    /// With `--expires-in`: drop it once expired instead of keeping it in the dead set.
    #[arg(long = "drop-expired", requires = "expires_in")]
    pub drop_expired: bool,
    /// Its fair key (1 to 128 bytes), instead of the one the job takes from an argument.
    #[arg(long = "fair-key")]
    pub fair_key: Option<String>,
    /// Store it even if no worker published the name in the catalogue.
    #[arg(long)]
    pub force: bool,
}

/// Lists the catalogue.
pub async fn list(admin: &Admin, args: JsonFlag, out: &mut impl Write) -> Result<(), AdminError> {
    let jobs = admin.client().catalogue().await?;
    if args.json {
        table::print_json(out, &jobs)?;
        return Ok(());
    }
    if jobs.is_empty() {
        writeln!(
            out,
            "no job in the catalogue: no worker has published its jobs lately"
        )?;
        return Ok(());
    }
    let mut rows = table::new(&["JOB", "QUEUE", "ARGS", "OPTIONS", "WORKERS"]);
    for job in &jobs {
        let def = &job.definition;
        table::add_row(
            &mut rows,
            vec![
                def.job.clone(),
                def.queue.clone(),
                params(def),
                options(def),
                workers(job),
            ],
        );
    }
    table::print(out, &rows)?;
    Ok(())
}

/// Enqueues one job by name.
pub async fn enqueue(
    admin: &Admin,
    args: EnqueueArgs,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let values: serde_json::Value =
        serde_json::from_str(&args.args).map_err(|e| gator_core::Error::InvalidArgs {
            reason: format!("ARGS must be a JSON array: {e}"),
        })?;
    let mut by_name = admin.client().dispatch_by_name(&args.job, values);
    if let Some(queue) = &args.queue {
        by_name = by_name.queue(queue);
    }
    if args.force {
        by_name = by_name.force();
    }
    if let Some(fair) = args.fair_key {
        by_name = by_name.fair_key(fair);
    }
    if let Some(delay) = args.delay {
        by_name = by_name.after(delay)?;
    }
    if let Some(ttl) = args.expires_in {
        by_name = by_name.expires_in(ttl)?;
        if args.drop_expired {
            by_name = by_name.on_expire(gator_core::expiry::OnExpire::Drop);
        }
    }
    let dispatched = by_name.dispatch().await?;
    let what = if dispatched.is_duplicate() {
        "duplicate of"
    } else {
        "enqueued"
    };
    writeln!(out, "{}: {what} {}", args.job, dispatched.into_jid())?;
    Ok(())
}

fn params(def: &Definition) -> String {
    match &def.params {
        Some(params) => params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.ty))
            .collect::<Vec<_>>()
            .join(", "),
        None => "?".into(),
    }
}

/// The options set, as `#[job(...)]` writes them.
fn options(def: &Definition) -> String {
    let mut shown = vec![format!("retries={}", def.retries)];
    let mut add = |text: Option<String>| shown.extend(text);
    add(match def.backoff.as_str() {
        "list" => Some(format!(
            "backoff=[{}]",
            def.backoff_ms
                .iter()
                .map(|ms| table::age(*ms))
                .collect::<Vec<_>>()
                .join(",")
        )),
        "custom" => Some("backoff=custom".to_owned()),
        _ => None,
    });
    add(def
        .timeout_ms
        .map(|ms| format!("timeout={}", table::age(ms))));
    add(def.flow.priority.map(|p| format!("priority={p}")));
    add(def.flow.cost.map(|c| format!("cost={c}")));
    add(def.flow.critical.then(|| "critical".to_owned()));
    add(def.limit_key_arg.map(|i| format!("limit_key=arg{}", i + 1)));
    add(def.fair_key_arg.map(|i| format!("fair_key=arg{}", i + 1)));
    add(def
        .expires_in_ms
        .map(|ms| format!("expires_in={}", table::age(ms))));
    add(
        (def.expires_in_ms.is_some() && def.on_expire == gator_core::expiry::OnExpire::Drop)
            .then(|| "on_expire=drop".to_owned()),
    );
    add(def.flow.rate.as_ref().map(|r| format!("rate={r}")));
    add((!def.flow.windows.is_empty()).then(|| format!("windows={}", def.flow.windows.join(","))));
    add(def.flow.tz.as_ref().map(|tz| format!("tz={tz}")));
    add(match def.no_overlap {
        Overlap::None => None,
        Overlap::Args => Some("no_overlap".to_owned()),
        Overlap::Arg(i) => Some(format!("overlap_key=arg{}", i + 1)),
    });
    add(def.unique.as_ref().map(|u| {
        let mut text = format!("unique_for={} until={}", table::age(u.for_ms), u.until);
        if let Some(ms) = u.debounce_ms {
            text.push_str(&format!(" debounce={}", table::age(ms)));
        }
        text
    }));
    shown.join(" ")
}

fn workers(job: &Known) -> String {
    if job.runners.is_empty() {
        return "none live".into();
    }
    job.runners
        .iter()
        .map(|r| r.worker.clone())
        .collect::<Vec<_>>()
        .join(", ")
}
