//! `gator-worker stats`, `queues` and `processes`: the fleet at a glance, from
//! [`gator_core::admin`], as tables or (`--json`) as JSON.

use crate::cli::AdminError;
use crate::cli::JsonFlag;
use crate::cli::table;
use gator_core::Admin;
use gator_core::admin::{HistorySpan, Overview};
use std::io::Write;

/// Processed and failed over one span of the history.
type SpanCounts = (HistorySpan, u64, u64);

/// `gator-worker stats`: totals, the last hour, day and week, and the Redis server.
pub async fn stats(admin: &Admin, args: JsonFlag, out: &mut impl Write) -> Result<(), AdminError> {
    let overview = admin.overview().await?;
    let mut spans = Vec::new();
    for span in [HistorySpan::Hour, HistorySpan::Day, HistorySpan::Week] {
        let points = admin.history(span, None).await?;
        let processed = points.iter().map(|p| p.processed).sum::<u64>();
        let failed = points.iter().map(|p| p.failed).sum::<u64>();
        spans.push((span, processed, failed));
    }
    if args.json {
        let last: serde_json::Map<String, serde_json::Value> = spans
            .iter()
            .map(|(span, processed, failed)| {
                let counts = serde_json::json!({"processed": processed, "failed": failed});
                (span.to_string(), counts)
            })
            .collect();
        let mut value = serde_json::to_value(&overview).map_err(std::io::Error::other)?;
        value["last"] = serde_json::Value::Object(last);
        return Ok(table::print_json(out, &value)?);
    }
    print_stats(&overview, &spans, out)?;
    Ok(())
}

/// `stats` as tables: the totals, the recent spans, then a line on the fleet and Redis.
fn print_stats(
    overview: &Overview,
    spans: &[SpanCounts],
    out: &mut impl Write,
) -> std::io::Result<()> {
    let mut totals = table::new(&["", "jobs"]);
    for (name, n) in [
        ("processed", overview.processed),
        ("failed", overview.failed),
        ("enqueued", overview.enqueued),
        ("busy", overview.busy),
        ("scheduled", overview.scheduled),
        ("retries", overview.retries),
        ("dead", overview.dead),
    ] {
        table::add_row(&mut totals, [name.to_owned(), n.to_string()]);
    }
    table::print(out, &totals)?;
    writeln!(out)?;
    let mut recent = table::new(&["last", "processed", "failed"]);
    for (span, processed, failed) in spans {
        table::add_row(
            &mut recent,
            [span.to_string(), processed.to_string(), failed.to_string()],
        );
    }
    table::print(out, &recent)?;
    writeln!(out)?;
    let redis = &overview.redis;
    writeln!(
        out,
        "{} worker processes, {} queues; redis {} ({}), {} used, {} clients, up {}",
        overview.processes,
        overview.queues,
        redis.version,
        redis.mode,
        redis.used_memory_human,
        redis.connected_clients,
        table::age(redis.uptime_seconds * 1000),
    )?;
    if !overview.broken_queues.is_empty() {
        writeln!(
            out,
            "BROKEN queues, left out of the totals (see `gator-worker queues`): {}",
            gator_rules::escape(&overview.broken_queues.join(", "))
        )?;
    }
    broken_keys(out, &overview.broken_keys)
}

/// One line per broken global key (a known-queues set, a catalogue ... of another type): what
/// reads it sees it empty ([`gator_core::Error::BrokenKey`]).
fn broken_keys(out: &mut impl Write, broken: &[crate::door::BrokenKey]) -> std::io::Result<()> {
    for key in broken {
        writeln!(
            out,
            "key {} is BROKEN: {}; read as empty until it is deleted or repaired with redis-cli",
            key.key, key.reason
        )?;
    }
    Ok(())
}

/// `gator-worker queues`: one row per queue.
pub async fn queues(admin: &Admin, args: JsonFlag, out: &mut impl Write) -> Result<(), AdminError> {
    let queues = admin.queue_infos().await?;
    if args.json {
        return Ok(table::print_json(out, &queues)?);
    }
    let mut rows = table::new(&[
        "queue",
        "size",
        "latency",
        "busy",
        "scheduled",
        "retries",
        "dead",
        "state",
        "limit",
        "parked",
        "processed",
        "failed",
    ]);
    for q in &queues {
        let state = match (&q.broken, q.paused, q.controlled) {
            (Some(_), _, _) => "BROKEN",
            (None, true, _) => "paused",
            (None, false, true) => "controlled",
            (None, false, false) => "",
        };
        let limit = q
            .limit
            .map_or(String::new(), |limit| format!("{}/{limit}", q.units_in_use));
        table::add_row(
            &mut rows,
            [
                q.name.clone(),
                q.size.to_string(),
                q.latency_ms.map_or("-".to_owned(), table::age),
                q.busy.to_string(),
                q.scheduled.to_string(),
                q.retries.to_string(),
                q.dead.to_string(),
                state.to_owned(),
                limit,
                q.parked.to_string(),
                q.processed.to_string(),
                q.failed.to_string(),
            ],
        );
    }
    table::print(out, &rows)?;
    writeln!(out, "{} queues", queues.len())?;
    // Why a queue is broken: below the table, which keeps its width.
    for q in &queues {
        if let Some(reason) = &q.broken {
            let (name, reason) = (gator_rules::escape(&q.name), gator_rules::escape(reason));
            writeln!(out, "queue {name} is BROKEN: {reason}")?;
        }
    }
    Ok(broken_keys(out, &admin.broken_keys().await?)?)
}

/// `gator-worker processes`: one row per live worker process, and under it the jobs it runs.
pub async fn processes(
    admin: &Admin,
    args: JsonFlag,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let processes = admin.processes().await?;
    if args.json {
        return Ok(table::print_json(out, &processes)?);
    }
    let mut rows = table::new(&["process", "host", "pid", "queues", "busy", "beat", "up"]);
    let now = admin.client().redis_time().await?;
    for p in &processes {
        table::add_row(
            &mut rows,
            [
                p.id.clone(),
                p.host.clone(),
                p.pid.to_string(),
                p.queues.clone(),
                format!("{}/{}", p.busy, p.concurrency),
                format!("{} ago", table::age(p.heartbeat_age_ms)),
                table::age(now.saturating_sub(p.started_at_ms)),
            ],
        );
    }
    table::print(out, &rows)?;
    let running: Vec<_> = processes
        .iter()
        .flat_map(|p| p.jobs.iter().map(move |j| (p, j)))
        .collect();
    writeln!(
        out,
        "{} processes, {} jobs running",
        processes.len(),
        running.len()
    )?;
    if !running.is_empty() {
        writeln!(out)?;
        let mut jobs = table::new(&["process", "queue", "jid", "job", "attempt", "running for"]);
        for (p, j) in running {
            table::add_row(
                &mut jobs,
                [
                    p.id.clone(),
                    j.queue.clone(),
                    j.jid.clone(),
                    j.job.clone(),
                    j.attempt.to_string(),
                    j.running_for_ms
                        .map_or("just started".to_owned(), table::age),
                ],
            );
        }
        table::print(out, &jobs)?;
    }
    Ok(())
}
