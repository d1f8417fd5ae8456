//! `gator-worker limiter ...`: the rate limiters shared across queues (see
//! [`gator_core::flow`]).

use crate::cli::{AdminError, JsonFlag, table};
use clap::Subcommand;
use gator_core::Admin;
use gator_core::flow::RateSpec;
use std::io::Write;

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

/// Runs `gator-worker limiter ACTION`.
pub async fn run(
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
                table::print_json(out, &limiters)?;
            } else {
                for limiter in &limiters {
                    writeln!(
                        out,
                        "{}  {}  next start {}",
                        gator_rules::escape(&limiter.name),
                        limiter.rate,
                        table::next_start(limiter.next_allowed_ms)
                    )?;
                }
                writeln!(out, "{} shared limiters", limiters.len())?;
            }
        }
    }
    Ok(())
}
