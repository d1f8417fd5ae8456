//! `gator-worker queue show QUEUE [--json]`: a queue's flow controls as they stand (see
//! [`FlowStatus`]), one line per control.

use crate::cli::{AdminError, table};
use crate::door::FlowStatus;
use gator_core::Admin;
use std::io::Write;

/// Shows `queue`'s flow controls, as lines or (`json`) as JSON.
pub async fn run(
    admin: &Admin,
    queue: &str,
    json: bool,
    out: &mut impl Write,
) -> Result<(), AdminError> {
    let status = admin.flow_status(queue).await?;
    if json {
        table::print_json(out, &status)?;
    } else {
        show(&status, out)?;
    }
    Ok(())
}

/// The lines: state, limit and units by key, shares, parked jobs, rates, aging, order, windows.
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
    units(status, out)?;
    parked(status, out)?;
    for rate in &status.rates {
        let name = if rate.name.is_empty() {
            "the queue's".to_owned()
        } else {
            format!("limiter {}", quoted(&rate.name))
        };
        writeln!(
            out,
            "  rate: {name} {}, next start {}",
            rate.rate,
            table::next_start(rate.next_allowed_ms)
        )?;
    }
    if let Some(aging) = status.aging {
        writeln!(
            out,
            "  aging: one priority step per {}",
            humantime::format_duration(aging)
        )?;
    }
    writeln!(out, "  order: {}", gator_rules::escape(&status.order))?;
    if let Some(windows) = &status.windows {
        writeln!(out, "  windows: {}", gator_rules::escape(windows))?;
    }
    Ok(())
}

/// The limit, the units each key holds, and the keys' shares.
fn units(status: &FlowStatus, out: &mut impl Write) -> std::io::Result<()> {
    match status.limit {
        Some(limit) => writeln!(
            out,
            "  limit: {} of {limit} units in use",
            status.units_in_use
        )?,
        None => writeln!(out, "  limit: none")?,
    }
    for (key, units) in &status.units_by_key {
        writeln!(out, "    key {}: {units} units", quoted(key))?;
    }
    for (key, percent) in &status.shares {
        writeln!(out, "  share: key {} {percent} %", quoted(key))?;
    }
    if let Some(percent) = status.default_share {
        writeln!(out, "  share: unlisted keys {percent} %")?;
    }
    fair(status, out)
}

/// The fair keys' weights, and how many keys take turns now.
fn fair(status: &FlowStatus, out: &mut impl Write) -> std::io::Result<()> {
    for (key, weight) in &status.fair_weights {
        writeln!(out, "  fair weight: key {} {weight}", quoted(key))?;
    }
    if let Some(weight) = status.default_fair_weight {
        writeln!(out, "  fair weight: unlisted keys {weight}")?;
    }
    if status.fair_keys_waiting > 0 {
        writeln!(
            out,
            "  fair keys taking turns: {}",
            status.fair_keys_waiting
        )?;
    }
    Ok(())
}

/// The jobs waiting their turn: parked by key, critical ones, and the backlog not parked yet.
fn parked(status: &FlowStatus, out: &mut impl Write) -> std::io::Result<()> {
    // The total `queues` shows in its `parked` column, then by key.
    if !status.parked.is_empty() {
        let (all, ready) = (status.parked_jobs(), status.parked_ready());
        writeln!(
            out,
            "  parked: {all} jobs ({ready} in keys ready to start, {} held back by their key)",
            all - ready
        )?;
    }
    for parked in &status.parked {
        let rate = parked
            .rate
            .as_ref()
            .map(|r| format!(", limiter {}", quoted(r)))
            .unwrap_or_default();
        let overlap = parked
            .overlap
            .as_ref()
            .map(|o| format!(", overlap key {}", quoted(o)))
            .unwrap_or_default();
        writeln!(
            out,
            "    key {}{rate}{overlap}: {} jobs ({})",
            quoted(&parked.key),
            parked.jobs,
            parked.state
        )?;
    }
    if status.critical_waiting > 0 {
        writeln!(out, "  critical jobs waiting: {}", status.critical_waiting)?;
    }
    if status.backlog > 0 {
        writeln!(out, "  backlog still to park: {}", status.backlog)?;
    }
    Ok(())
}

/// A key or name from Redis in quotes, escaped ([`gator_rules::escape`]).
fn quoted(text: &str) -> String {
    format!("\"{}\"", gator_rules::escape(text))
}
