//! `gator-worker scaling [--target-latency 30s] [--max-workers 100] [--json]`: the autoscaling
//! signal of every known queue ([`gator_core::admin::scaling`]), as a table or as the JSON
//! `GET /api/scaling` serves.

use crate::cli::AdminError;
use crate::cli::table;
use clap::Args;
use gator_core::Admin;
use gator_core::admin::ScalingPolicy;
use gator_core::admin::scaling::DEFAULT_MAX_WORKERS;
use std::io::Write;
use std::time::Duration;

/// `scaling`'s options.
#[derive(Debug, Args)]
pub struct ScalingArgs {
    /// The latency (age of the oldest waiting job) the suggestion aims at: 1s to 1day.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub target_latency: Duration,
    /// The most workers suggested for one queue: 1 to 10000.
    #[arg(long, default_value_t = DEFAULT_MAX_WORKERS)]
    pub max_workers: u32,
    /// Prints JSON instead (the shape of `GET /api/scaling`).
    #[arg(long)]
    pub json: bool,
}

/// `gator-worker scaling`.
pub async fn run(admin: &Admin, args: ScalingArgs, out: &mut impl Write) -> Result<(), AdminError> {
    let policy = ScalingPolicy::new(args.target_latency, args.max_workers)?;
    let scaling = admin.scaling(policy).await?;
    if args.json {
        return Ok(table::print_json(out, &scaling)?);
    }
    let mut rows = table::new(&[
        "queue",
        "backlog",
        "latency",
        "busy/capacity",
        "workers",
        "jobs/s",
        "suggested",
        "basis",
    ]);
    for (queue, row) in &scaling.queues {
        let basis = match (&row.broken, row.basis) {
            (Some(_), _) => "BROKEN".to_owned(),
            (None, basis) => format!("{basis:?}").to_lowercase(),
        };
        table::add_row(
            &mut rows,
            [
                queue.clone(),
                row.backlog.to_string(),
                table::age((row.latency_seconds * 1000.0) as u64),
                format!("{}/{}", row.busy, row.capacity),
                row.workers.to_string(),
                format!("{:.2}", row.throughput),
                row.suggested_workers.to_string(),
                basis,
            ],
        );
    }
    table::print(out, &rows)?;
    writeln!(
        out,
        "target latency {}, at most {} workers a queue",
        humantime::format_duration(policy.target_latency()),
        policy.max_workers()
    )?;
    Ok(())
}
