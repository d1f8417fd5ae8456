//! `gator-worker outbox [--json] | migrate | dead | retry | discard` (the `postgres` feature):
//! the transactional outbox on PostgreSQL, from the database named by the global `--outbox`
//! (`GATOR_OUTBOX_URL`), through [`gator_outbox`]. The status adds what each relay last
//! reported in Redis ([`Admin::outbox_reports`]); the other commands never touch Redis, so
//! `outbox migrate` runs before any Redis exists.

use crate::cli::{AdminError, table};
use crate::outbox::OutboxDatabase;
use clap::{Args, Subcommand};
use gator_core::Admin;
use gator_core::outbox::Report;
use gator_outbox::sqlx::PgPool;
use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

/// `gator-worker outbox`: the status, or an action.
#[derive(Debug, Args)]
pub struct OutboxCommand {
    /// What to do; without one, the status.
    #[command(subcommand)]
    pub action: Option<OutboxAction>,
    /// Prints the status as JSON instead.
    #[arg(long)]
    pub json: bool,
    /// The database: the global `--outbox`, which `gator_worker::main` puts here.
    #[arg(skip)]
    pub database: Option<OutboxDatabase>,
}

/// What `gator-worker outbox` does besides the status.
#[derive(Debug, Subcommand)]
pub enum OutboxAction {
    /// Applies the outbox's schema (its table, indexes and NOTIFY trigger); safe to run again.
    Migrate,
    /// Lists dead rows (Redis refused their jobs), newest first: id, jid, queue, job, reason
    /// (cut to 120 characters; whole with --json), dead at.
    Dead(DeadArgs),
    /// Puts dead rows back for the relays, by id or `--all`, once the cause is fixed.
    Retry(RetryArgs),
    /// Deletes dead rows for good: their jobs will never run.
    Discard(DiscardArgs),
}

/// `outbox dead`'s options.
#[derive(Debug, Args)]
pub struct DeadArgs {
    /// Show at most this many rows (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: u16,
    /// Skip this many rows first (the next page: the last page's offset plus its limit).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: u32,
    /// Prints JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `outbox retry`'s options.
#[derive(Debug, Args)]
pub struct RetryArgs {
    /// The ids of the dead rows (as `outbox dead` lists them).
    #[arg(
        value_name = "ID",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub ids: Vec<i64>,
    /// Every dead row.
    #[arg(long)]
    pub all: bool,
}

/// `outbox discard`'s options.
#[derive(Debug, Args)]
pub struct DiscardArgs {
    /// The ids of the dead rows (as `outbox dead` lists them).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<i64>,
}

impl OutboxCommand {
    /// Whether it reads Redis: only the status does (the relays' reports).
    pub fn needs_redis(&self) -> bool {
        self.action.is_none()
    }
}

/// Runs `command` (`admin`: the Redis of the relays' reports, for the status).
pub async fn run(
    admin: Option<&Admin>,
    command: OutboxCommand,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let database = command.database.ok_or(AdminError::NoOutboxDatabase)?;
    let pool = database.pool();
    let result = act(&pool, &database, admin, command.action, command.json, out).await;
    pool.close().await;
    result
}

/// Runs `action` on the database at `pool`.
async fn act(
    pool: &PgPool,
    database: &OutboxDatabase,
    admin: Option<&Admin>,
    action: Option<OutboxAction>,
    json: bool,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    // First, on a connection of its own: an unreachable database is named with its cause.
    let exists = crate::outbox::relay::table_exists(database)
        .await
        .map_err(gator_outbox::Error::from)?;
    match action {
        Some(OutboxAction::Migrate) => migrate(pool, database, out).await,
        _ if !exists => Err(AdminError::NoOutboxTable {
            database: database.to_string(),
        }),
        None => status(pool, admin, json, out).await,
        Some(OutboxAction::Dead(args)) => dead(pool, args, out).await,
        Some(OutboxAction::Retry(args)) => retry(pool, args, out).await,
        Some(OutboxAction::Discard(args)) => discard(pool, args, out).await,
    }
}

/// `outbox migrate`.
async fn migrate(
    pool: &PgPool,
    database: &OutboxDatabase,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    gator_outbox::migrate(pool).await?;
    writeln!(out, "the outbox's schema is in place in {database}")?;
    Ok(())
}

/// `outbox`: the counts from PostgreSQL, then each relay's report from Redis.
async fn status(
    pool: &PgPool,
    admin: Option<&Admin>,
    json: bool,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let status = gator_outbox::status(pool).await?;
    let (reports, now_ms) = match admin {
        Some(admin) => (
            admin.outbox_reports().await?,
            admin.client().redis_time().await?,
        ),
        None => (Vec::new(), 0),
    };
    let lag_ms = u64::try_from(status.lag.as_millis()).unwrap_or(u64::MAX);
    if json {
        let value = serde_json::json!({
            "waiting": status.waiting,
            "dead": status.dead,
            "lag_ms": lag_ms,
            "relays": reports,
        });
        return Ok(table::print_json(out, &value)?);
    }
    writeln!(out, "waiting  {}", status.waiting)?;
    writeln!(out, "dead     {}", status.dead)?;
    writeln!(out, "lag      {}", table::age(lag_ms))?;
    writeln!(out)?;
    print_reports(&reports, now_ms, out)?;
    Ok(())
}

/// The relays' reports as a table, or a line saying none reports.
fn print_reports(reports: &[Report], now_ms: u64, out: &mut impl Write) -> std::io::Result<()> {
    if reports.is_empty() {
        return writeln!(
            out,
            "no relay reported in the last minute: start a worker with --outbox URL"
        );
    }
    let mut rows = table::new(&[
        "relay", "reported", "waiting", "dead", "lag", "rows/s", "relayed",
    ]);
    for r in reports {
        table::add_row(
            &mut rows,
            [
                r.relay.clone(),
                format!("{} ago", table::age(now_ms.saturating_sub(r.at_ms))),
                r.waiting.to_string(),
                r.dead.to_string(),
                table::age(r.lag_ms),
                format!("{:.1}", r.rows_per_second),
                r.relayed.to_string(),
            ],
        );
    }
    table::print(out, &rows)?;
    writeln!(out, "{} relays reporting", reports.len())
}

/// `outbox dead`.
async fn dead(pool: &PgPool, args: DeadArgs, out: &mut impl Write) -> Result<(), AdminError> {
    let rows = gator_outbox::dead(pool, i64::from(args.limit), i64::from(args.offset)).await?;
    if args.json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "jid": r.jid, "queue": r.queue, "job": r.job,
                    "reason": r.reason, "dead_at_ms": r.dead_at_ms,
                })
            })
            .collect();
        return Ok(table::print_json(out, &rows)?);
    }
    let mut table_rows = table::new(&["id", "jid", "queue", "job", "reason", "dead at"]);
    for r in &rows {
        let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(r.dead_at_ms).unwrap_or(0));
        table::add_row(
            &mut table_rows,
            [
                r.id.to_string(),
                r.jid.clone(),
                r.queue.clone(),
                r.job.clone(),
                crate::cli::sets::one_line(&r.reason),
                table::time(at),
            ],
        );
    }
    table::print(out, &table_rows)?;
    writeln!(
        out,
        "{} dead rows from offset {} (outbox retry ID.. puts them back)",
        rows.len(),
        args.offset
    )?;
    Ok(())
}

/// `outbox retry`.
async fn retry(pool: &PgPool, args: RetryArgs, out: &mut impl Write) -> Result<(), AdminError> {
    let n = if args.all {
        gator_outbox::retry_all(pool).await?
    } else {
        gator_outbox::retry(pool, &args.ids).await?
    };
    writeln!(out, "{n} dead rows put back for the relays")?;
    Ok(())
}

/// `outbox discard`.
async fn discard(pool: &PgPool, args: DiscardArgs, out: &mut impl Write) -> Result<(), AdminError> {
    let n = gator_outbox::discard(pool, &args.ids).await?;
    writeln!(out, "{n} dead rows discarded")?;
    Ok(())
}
