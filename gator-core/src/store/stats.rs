//! Processed and failed counts per queue: all time, per minute for a day, per hour for two
//! weeks. Workers add to them once a second in one `MULTI` per queue that had work ([`flush`]),
//! never once per job; the dashboard and `gator-worker stats` read them ([`totals`],
//! [`buckets`]).
//!
//! Buckets are keyed by Redis time (the worker's estimate of it, learnt from every heartbeat),
//! so workers whose own clocks disagree still count a minute into the same bucket.

use crate::error::Result;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;
use std::collections::HashMap;

const MINUTE_MS: u64 = 60_000;
const HOUR_MS: u64 = 3_600_000;
const DAY_MS: u64 = 86_400_000;
/// A day's minute hash outlives its last write by two days, so the last 24 hours are always
/// there whatever the time of day.
const MINUTES_KEPT_MS: u64 = 2 * DAY_MS;
/// A day's hour hash outlives its last write by sixteen days: two full weeks, with margin.
const HOURS_KEPT_MS: u64 = 16 * DAY_MS;

/// Attempts that ended in one queue since the last flush.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Attempts that ended, whatever their outcome.
    pub processed: u64,
    /// Attempts that failed (retried, dead or discarded).
    pub failed: u64,
}

impl Counts {
    /// Whether there is nothing to add.
    pub fn is_empty(&self) -> bool {
        self.processed == 0 && self.failed == 0
    }
}

/// Adds `counts` to `queue`'s counters as of `now_ms` (Redis time): the all-time hash, the
/// minute's bucket and the hour's, with their expiries, in one `MULTI` (one slot, the queue's).
pub async fn flush(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    counts: Counts,
    now_ms: u64,
) -> Result<()> {
    if counts.is_empty() {
        return Ok(());
    }
    let day = now_ms / DAY_MS;
    let minute = (now_ms % DAY_MS) / MINUTE_MS;
    let hour = (now_ms % DAY_MS) / HOUR_MS;
    let (minutes, hours) = (
        keys.history_minutes(queue, day),
        keys.history_hours(queue, day),
    );
    let mut pipe = redis::pipe();
    pipe.atomic();
    for (field, n) in [("processed", counts.processed), ("failed", counts.failed)] {
        if n > 0 {
            pipe.hincr(keys.stats(queue), field, n).ignore();
        }
    }
    for (key, bucket) in [(&minutes, minute), (&hours, hour)] {
        for (suffix, n) in [("p", counts.processed), ("f", counts.failed)] {
            if n > 0 {
                pipe.hincr(key, format!("{bucket}:{suffix}"), n).ignore();
            }
        }
    }
    pipe.cmd("PEXPIRE")
        .arg(&minutes)
        .arg(MINUTES_KEPT_MS)
        .ignore();
    pipe.cmd("PEXPIRE").arg(&hours).arg(HOURS_KEPT_MS).ignore();
    pipe.query_async::<()>(conn).await?;
    Ok(())
}

/// The all-time counters of each of `queues`, in one pipeline.
pub async fn totals(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[String],
) -> Result<Vec<Counts>> {
    if queues.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for queue in queues {
        pipe.cmd("HMGET")
            .arg(keys.stats(queue))
            .arg("processed")
            .arg("failed");
    }
    let rows: Vec<(Option<u64>, Option<u64>)> = pipe.query_async(conn).await?;
    Ok(rows
        .into_iter()
        .map(|(processed, failed)| Counts {
            processed: processed.unwrap_or(0),
            failed: failed.unwrap_or(0),
        })
        .collect())
}

/// Bucket width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// One bucket per minute, kept for a day.
    Minute,
    /// One bucket per hour, kept for two weeks.
    Hour,
}

impl Resolution {
    /// A bucket's width in ms.
    pub fn width_ms(self) -> u64 {
        match self {
            Resolution::Minute => MINUTE_MS,
            Resolution::Hour => HOUR_MS,
        }
    }
}

/// The `count` buckets of `resolution` ending with the one holding `now_ms`, oldest first, as
/// `(bucket start ms, counts)` summed over `queues`: one `HGETALL` per queue and day, in one
/// pipeline.
pub async fn buckets(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[String],
    resolution: Resolution,
    count: u64,
    now_ms: u64,
) -> Result<Vec<(u64, Counts)>> {
    let width = resolution.width_ms();
    let last = now_ms / width * width;
    let first = last.saturating_sub(width * count.saturating_sub(1));
    let days: Vec<u64> = (first / DAY_MS..=last / DAY_MS).collect();
    let mut sums: HashMap<u64, Counts> = HashMap::new();
    if !queues.is_empty() {
        let mut pipe = redis::pipe();
        for queue in queues {
            for &day in &days {
                pipe.cmd("HGETALL").arg(match resolution {
                    Resolution::Minute => keys.history_minutes(queue, day),
                    Resolution::Hour => keys.history_hours(queue, day),
                });
            }
        }
        // A bucket key that is not a hash of counts (written by hand) counts as empty: one
        // queue's bad key must not take the fleet's history with it.
        let hashes: Vec<redis::RedisResult<HashMap<String, u64>>> =
            pipe.ignore_errors().query_async(conn).await?;
        for (i, hash) in hashes.into_iter().enumerate() {
            let hash = hash.unwrap_or_default();
            let day = days[i % days.len()];
            for (field, n) in hash {
                let Some((bucket, kind)) = field.split_once(':') else {
                    continue;
                };
                let Ok(bucket) = bucket.parse::<u64>() else {
                    continue;
                };
                let counts = sums.entry(day * DAY_MS + bucket * width).or_default();
                match kind {
                    "p" => counts.processed += n,
                    "f" => counts.failed += n,
                    _ => {}
                }
            }
        }
    }
    Ok((0..count)
        .map(|i| first + i * width)
        .filter(|&at| at <= last)
        .map(|at| (at, sums.get(&at).copied().unwrap_or_default()))
        .collect())
}
