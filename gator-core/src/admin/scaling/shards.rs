//! Sharded queues in the scaling signal: which stored queues make one row ([`groups`]), and
//! how their shares add up ([`fold`]). Workers and capacity are counted once per process, so
//! a worker serving four shards is one worker, not four.

use super::{Basis, QueueScaling, ScalingPolicy, suggest};
use crate::shards::logical_queue;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One stored queue's share of a row: its numbers, and the live processes holding its lease.
pub(super) struct Part {
    pub(super) row: QueueScaling,
    pub(super) holders: Vec<String>,
    /// Whether the stored queue is a shard (`default#3`), not a queue's own list.
    shard: bool,
}

impl Part {
    /// The share of the stored queue `info` describes, before its fleet is read.
    pub(super) fn of(info: &crate::admin::QueueInfo) -> Part {
        Part {
            row: QueueScaling {
                backlog: info.size,
                latency_seconds: info.latency_ms.unwrap_or(0) as f64 / 1000.0,
                broken: info.broken.clone(),
                ..idle()
            },
            holders: Vec::new(),
            shard: logical_queue(&info.name) != info.name,
        }
    }
}

/// A row of nothing: nothing waits, runs or serves.
fn idle() -> QueueScaling {
    QueueScaling {
        backlog: 0,
        latency_seconds: 0.0,
        orphaned: 0,
        busy: 0,
        capacity: 0,
        workers: 0,
        throughput: 0.0,
        suggested_workers: 0,
        basis: Basis::Idle,
        broken: None,
        shards: 0,
    }
}

/// The stored queues each of `queues` covers, by row name: a queue's own list and every shard
/// of it in `known` (the known-queues set); a shard named alone covers itself.
pub(super) fn groups(queues: &[String], known: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut groups = BTreeMap::new();
    for queue in queues {
        let mut names = vec![queue.clone()];
        if logical_queue(queue) == queue {
            let shards = known
                .iter()
                .filter(|k| *k != queue && logical_queue(k) == queue);
            names.extend(shards.cloned());
        }
        groups.insert(queue.clone(), names);
    }
    groups
}

/// A row summed from its stored queues' shares, not yet suggested ([`Folded::finish`]).
pub(super) struct Folded {
    row: QueueScaling,
    holders: BTreeSet<String>,
}

/// Adds `parts` up: counts summed, the oldest latency, the first reason one could not be read.
pub(super) fn fold(parts: impl Iterator<Item = Part>) -> Folded {
    let mut folded = Folded {
        row: idle(),
        holders: BTreeSet::new(),
    };
    for part in parts {
        let (sum, row) = (&mut folded.row, part.row);
        sum.backlog += row.backlog;
        sum.latency_seconds = sum.latency_seconds.max(row.latency_seconds);
        sum.orphaned += row.orphaned;
        sum.busy += row.busy;
        sum.throughput += row.throughput;
        sum.shards += u32::from(part.shard);
        if sum.broken.is_none() {
            sum.broken = row.broken;
        }
        folded.holders.extend(part.holders);
    }
    folded
}

impl Folded {
    /// The row, with workers and capacity from the live processes among its holders (each
    /// once) and the workers suggested under `policy`, unless a stored queue was unreadable.
    pub(super) fn finish(
        mut self,
        concurrency: &HashMap<String, u32>,
        policy: ScalingPolicy,
    ) -> QueueScaling {
        for holder in &self.holders {
            if let Some(n) = concurrency.get(holder) {
                self.row.workers += 1;
                self.row.capacity += u64::from(*n);
            }
        }
        if self.row.broken.is_none() {
            (self.row.suggested_workers, self.row.basis) = suggest(self.row.demand(), policy);
        }
        self.row
    }
}
