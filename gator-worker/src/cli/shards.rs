//! `gator-worker shards [QUEUE [COUNT]]`: show or set how many shards a queue is split into
//! (see [`gator_core::shards`]).

use crate::cli::AdminError;
use clap::Args;
use gator_core::Admin;
use std::io::Write;

/// The arguments of `gator-worker shards`.
#[derive(Debug, Args)]
pub struct ShardsArgs {
    /// The queue (default: list every sharded queue).
    pub queue: Option<String>,
    /// Split the queue into this many shards (1: make it one list again). Jobs already queued
    /// stay where they are and are still drained; new jobs are placed by the new count.
    pub count: Option<u32>,
}

/// Shows or sets shard counts, writing the outcome to `out`.
pub async fn run(admin: &Admin, args: ShardsArgs, out: &mut impl Write) -> Result<(), AdminError> {
    let counts = admin.shard_counts().await?;
    match (args.queue, args.count) {
        (None, _) => {
            let mut sharded: Vec<_> = counts.into_iter().collect();
            sharded.sort();
            for (queue, count) in &sharded {
                writeln!(out, "{}: {count} shards", gator_rules::escape(queue))?;
            }
            if sharded.is_empty() {
                writeln!(out, "no queue is sharded")?;
            }
        }
        (Some(queue), None) => {
            crate::door::validate_queue(&queue)?;
            match counts.get(&queue) {
                Some(count) => writeln!(out, "{queue}: {count} shards")?,
                None => writeln!(out, "{queue}: not sharded (one list)")?,
            }
        }
        (Some(queue), Some(count)) => {
            let before = counts.get(&queue).copied().unwrap_or(1);
            admin.set_shards(&queue, count).await?;
            writeln!(
                out,
                "{queue}: {before} → {count} shards; jobs already queued stay on their lists and are drained, new jobs are placed by the new count"
            )?;
        }
    }
    Ok(())
}
