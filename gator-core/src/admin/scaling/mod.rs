//! The autoscaling signal: per queue, its backlog, its latency (the age of its oldest waiting
//! job, on Redis time), the jobs the live workers serving it hold (busy) and could hold
//! (capacity), its recent throughput, and how many workers it needs to keep its latency under
//! a target ([`Admin::scaling`]). The HTTP API serves it at `GET /api/scaling` in the shape
//! KEDA's `metrics-api` scaler reads; `gator-worker --metrics-bind` serves it as gauges.
//!
//! # The suggestion
//! With `busy` jobs running now, `backlog` jobs waiting, a throughput `rate` (attempts that
//! ended per second over the last [`THROUGHPUT_MINUTES`] minutes, from the per-queue stats),
//! a target latency `T`, and `c` the mean concurrency of the live workers serving the queue:
//!
//! (`backlog` here counts the orphaned jobs too: those a crashed worker held, which wait for a
//! live worker's recovery pass.)
//!
//! 1. Nothing waits or runs (`backlog + busy = 0`): **0** workers (`basis: idle`).
//! 2. Jobs ran lately and some run now (`rate > 0`, `busy > 0`): each busy slot finishes
//!    `rate / busy` jobs a second, so the slots needed to keep up and also clear the backlog
//!    within `T` are `busy + backlog / (T × rate / busy)` (`basis: throughput`).
//! 3. Otherwise (no history yet, or no worker serves it): one slot per job waiting or running,
//!    `backlog + busy` (`basis: fallback`): enough to start every job at once.
//!
//! The workers suggested are `ceil(slots / c)` (with no live worker, `c` is the worker's
//! default concurrency, [`DEFAULT_CONCURRENCY`]), at most `max_workers` ([`ScalingPolicy`]).
//! A process serving several queues counts in the busy-capacity of each.
//!
//! # What it costs
//! Per stored queue (a queue, or each shard of a sharded one): the reads of its
//! [`super::QueueInfo`] (a handful of O(1) commands), one `ZRANGE` of its lease set, one
//! `LLEN` per live or expired holder and one `HMGET` of at most [`THROUGHPUT_MINUTES`]
//! fields, all in its own hash tag; plus, once, the registry of live processes and the
//! known-queues set.
//!
//! # Sharded queues
//! A sharded queue ([`crate::shards`]) is one row: backlog, orphaned, busy and throughput
//! summed over its shards, latency the oldest of theirs, and workers and capacity counted once
//! per live process serving any of them (`shards` says how many shard lists were read).

use super::Admin;
use crate::error::{Error, Result};
use crate::store::{self, processes::Description};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// The target latency unless asked otherwise.
pub const DEFAULT_TARGET_LATENCY: Duration = Duration::from_secs(30);
/// The shortest target latency accepted: the signal is sampled every few seconds.
pub const MIN_TARGET_LATENCY: Duration = Duration::from_secs(1);
/// The longest target latency accepted.
pub const MAX_TARGET_LATENCY: Duration = Duration::from_secs(86_400);
/// The most workers suggested unless asked otherwise.
pub const DEFAULT_MAX_WORKERS: u32 = 100;
/// The highest `max_workers` accepted.
pub const MAX_MAX_WORKERS: u32 = 10_000;
/// The concurrency assumed of a worker when none serves the queue (`gator-worker`'s default).
pub const DEFAULT_CONCURRENCY: u32 = 10;
/// How many minute buckets of the stats the throughput is measured over (the current one
/// included).
pub const THROUGHPUT_MINUTES: u64 = 5;

/// What the suggestion aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScalingPolicy {
    target_latency: Duration,
    max_workers: u32,
}

impl Default for ScalingPolicy {
    fn default() -> ScalingPolicy {
        ScalingPolicy {
            target_latency: DEFAULT_TARGET_LATENCY,
            max_workers: DEFAULT_MAX_WORKERS,
        }
    }
}

impl ScalingPolicy {
    /// A policy aiming at `target_latency` ([`MIN_TARGET_LATENCY`] to [`MAX_TARGET_LATENCY`])
    /// with at most `max_workers` (1 to [`MAX_MAX_WORKERS`]) suggested.
    pub fn new(target_latency: Duration, max_workers: u32) -> Result<ScalingPolicy> {
        if !(MIN_TARGET_LATENCY..=MAX_TARGET_LATENCY).contains(&target_latency) {
            return Err(Error::InvalidSetting {
                name: "target_latency",
                value: humantime::format_duration(target_latency).to_string(),
                expected: "a duration from 1s to 1day",
            });
        }
        if !(1..=MAX_MAX_WORKERS).contains(&max_workers) {
            return Err(Error::InvalidSetting {
                name: "max_workers",
                value: max_workers.to_string(),
                expected: "a number from 1 to 10000",
            });
        }
        Ok(ScalingPolicy {
            target_latency,
            max_workers,
        })
    }

    /// The target latency.
    pub fn target_latency(&self) -> Duration {
        self.target_latency
    }

    /// The most workers suggested.
    pub fn max_workers(&self) -> u32 {
        self.max_workers
    }
}

/// How the suggestion was reached (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Nothing waits or runs.
    Idle,
    /// From the recent throughput of the jobs running now.
    Throughput,
    /// No throughput to go by: a slot per job waiting or running.
    Fallback,
}

/// The autoscaling signal of one queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueScaling {
    /// Jobs waiting to start now: the queue's list, or on a controlled queue every parked
    /// job. Scheduled and retrying jobs count once they are due.
    pub backlog: u64,
    /// Age of the oldest waiting job (seconds, Redis time); 0 when nothing waits.
    pub latency_seconds: f64,
    /// Jobs left in the in-flight lists of workers whose lease expired (they crashed): they
    /// wait for a live worker's recovery pass to put them back, so they count as waiting.
    pub orphaned: u64,
    /// Jobs of the queue held by live workers.
    pub busy: u64,
    /// Jobs the live workers serving the queue may run at once (their concurrencies summed).
    pub capacity: u64,
    /// Live worker processes serving the queue (holding a live lease on it).
    pub workers: u64,
    /// Attempts that ended per second over the last [`THROUGHPUT_MINUTES`] minutes.
    pub throughput: f64,
    /// Workers needed to keep the latency under the target.
    pub suggested_workers: u32,
    /// How the suggestion was reached.
    pub basis: Basis,
    /// Why the queue could not be read, if it could not (its numbers are then zeros, or
    /// those of the shards that could be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken: Option<String>,
    /// The shard lists summed into this row; 0 for a queue that is not sharded.
    #[serde(skip_serializing_if = "is_zero")]
    pub shards: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The signal of every known queue, keyed by queue name, as `GET /api/scaling` serves it:
/// KEDA's `valueLocation` reads `queues.<queue>.suggested_workers`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scaling {
    /// The target latency the suggestions aim at (seconds).
    pub target_latency_seconds: f64,
    /// The most workers suggested for one queue.
    pub max_workers: u32,
    /// The signal of each queue.
    pub queues: BTreeMap<String, QueueScaling>,
}

/// What the suggestion is computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Demand {
    /// Jobs waiting (orphaned jobs included).
    pub backlog: u64,
    /// Jobs running.
    pub busy: u64,
    /// Live workers serving the queue.
    pub workers: u64,
    /// Their concurrencies summed.
    pub capacity: u64,
    /// Attempts ended per second, lately.
    pub throughput: f64,
}

/// The workers `demand` needs under `policy`, and how that was reached: the formula of the
/// [module docs](self).
pub fn suggest(demand: Demand, policy: ScalingPolicy) -> (u32, Basis) {
    let Demand {
        backlog,
        busy,
        workers,
        capacity,
        throughput,
    } = demand;
    if backlog + busy == 0 {
        return (0, Basis::Idle);
    }
    let (slots, basis) = if throughput > 0.0 && busy > 0 {
        let per_slot = throughput / busy as f64;
        let drain = backlog as f64 / (policy.target_latency.as_secs_f64() * per_slot);
        (busy as f64 + drain, Basis::Throughput)
    } else {
        ((backlog + busy) as f64, Basis::Fallback)
    };
    let per_worker = match (workers, capacity) {
        (0, _) | (_, 0) => f64::from(DEFAULT_CONCURRENCY),
        _ => capacity as f64 / workers as f64,
    };
    let workers = (slots / per_worker).ceil().max(1.0);
    (workers.min(f64::from(policy.max_workers)) as u32, basis)
}

impl Admin {
    /// The autoscaling signal of every known queue under `policy`: see the
    /// [module docs](self). A sharded queue is one row, its shards summed.
    pub async fn scaling(&self, policy: ScalingPolicy) -> Result<Scaling> {
        let known = self.known_queues().await?;
        let queues: std::collections::BTreeSet<&str> = known
            .iter()
            .map(|q| crate::shards::logical_queue(q))
            .collect();
        let queues: Vec<String> = queues.into_iter().map(str::to_owned).collect();
        self.scaling_of(&queues, policy).await
    }

    /// The autoscaling signal of `queues`, as [`Admin::scaling`]: a queue with shards is one
    /// row over its list and its shards' (a shard named alone, `default#1`, is its own row);
    /// a queue no client or worker registered reads as idle.
    pub async fn scaling_of(&self, queues: &[String], policy: ScalingPolicy) -> Result<Scaling> {
        for queue in queues {
            crate::store::keys::validate_stored_queue(queue)?;
        }
        let groups = shards::groups(queues, &self.known_queues().await?);
        let stored: Vec<String> = groups.values().flatten().cloned().collect();
        let infos = self.infos_of(&stored).await?;
        let now = self.redis_time().await?;
        let concurrency = self.live_concurrency(now).await?;
        let mut parts = HashMap::new();
        for info in infos {
            let name = info.name.clone();
            parts.insert(name, self.read_part(info, now).await?);
        }
        let rows = groups
            .into_iter()
            .map(|(queue, names)| {
                let row = shards::fold(names.iter().filter_map(|n| parts.remove(n)));
                (queue, row.finish(&concurrency, policy))
            })
            .collect();
        Ok(Scaling {
            target_latency_seconds: policy.target_latency.as_secs_f64(),
            max_workers: policy.max_workers,
            queues: rows,
        })
    }

    /// One stored queue's share of a row, from its info and, unless that is broken, its fleet.
    async fn read_part(&self, info: super::QueueInfo, now: u64) -> Result<shards::Part> {
        let mut part = shards::Part::of(&info);
        if part.row.broken.is_none() {
            // A key of the wrong type (written by hand) breaks its own row, no other.
            match self.read_fleet(&mut part, &info.name, now).await {
                Ok(()) => {}
                Err(e) if e.is_broken_data() => part.row.broken = Some(e.to_string()),
                Err(e) => return Err(e),
            }
        }
        Ok(part)
    }

    /// Fills `part`'s orphaned, busy, throughput and live holders from `queue`'s lease set,
    /// its holders' in-flight lists and its minute stats, as of `now` (Redis time).
    async fn read_fleet(&self, part: &mut shards::Part, queue: &str, now: u64) -> Result<()> {
        let (keys, mut conn) = (self.keys(), self.connection());
        let conn = &mut conn;
        // The lease set holds the live holders and, for a while, the expired ones: one read.
        let (live, gone): (Vec<_>, Vec<_>) = store::lease::holders(conn, keys, queue)
            .await?
            .into_iter()
            .partition(|(_, expiry)| *expiry > now);
        let holders: Vec<String> = live.into_iter().map(|(id, _)| id).collect();
        let expired: Vec<String> = gone.into_iter().map(|(id, _)| id).collect();
        part.row.busy = store::scaling::held(conn, keys, queue, &holders).await?;
        part.row.orphaned = store::scaling::held(conn, keys, queue, &expired).await?;
        let (ended, span_ms) =
            store::scaling::recent_processed(conn, keys, queue, THROUGHPUT_MINUTES, now).await?;
        part.row.throughput = ended as f64 * 1000.0 / span_ms as f64;
        part.holders = holders;
        Ok(())
    }

    /// The concurrency of every process registered and live at `now`, by id.
    async fn live_concurrency(&self, now: u64) -> Result<HashMap<String, u32>> {
        let (keys, mut conn) = (self.keys(), self.connection());
        let live = store::processes::live(&mut conn, keys, now).await?;
        if live.is_empty() {
            return Ok(HashMap::new());
        }
        let ids: Vec<&str> = live.iter().map(|(id, _)| id.as_str()).collect();
        let described = store::processes::descriptions(&mut conn, keys, &ids).await?;
        Ok(ids
            .iter()
            .zip(described)
            .filter_map(|(id, text)| {
                let d = serde_json::from_str::<Description>(&text?).ok()?;
                Some(((*id).to_owned(), d.concurrency.max(1)))
            })
            .collect())
    }
}

impl QueueScaling {
    fn demand(&self) -> Demand {
        Demand {
            backlog: self.backlog + self.orphaned,
            busy: self.busy,
            workers: self.workers,
            capacity: self.capacity,
            throughput: self.throughput,
        }
    }
}

mod shards;
#[cfg(test)]
mod tests;
