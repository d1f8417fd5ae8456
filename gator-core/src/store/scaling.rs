//! What the autoscaling signal reads of one queue besides its backlog (`fleet`) and its lease
//! holders (`lease::holders`): how many of its jobs they hold, and how many of its
//! attempts ended in the last minutes. Every read touches the queue's own hash tag only (one
//! slot on Redis Cluster) and costs O(1) or O(log n) per queue and live process: no list or
//! set of jobs is ever read whole.

use crate::error::Result;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;

const MINUTE_MS: u64 = 60_000;
const DAY_MS: u64 = 86_400_000;

/// Jobs of `queue` held by `holders`: the lengths of their in-flight lists (`LLEN`, O(1)
/// each), in one pipeline.
pub async fn held(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    holders: &[String],
) -> Result<u64> {
    if holders.is_empty() {
        return Ok(0);
    }
    let mut pipe = redis::pipe();
    for process in holders {
        pipe.llen(keys.inflight(queue, process));
    }
    let lens: Vec<u64> = pipe.query_async(conn).await?;
    Ok(lens.into_iter().sum())
}

/// Attempts of `queue` that ended in the `minutes` minute buckets up to the one holding `now`
/// (ms, Redis time), with how long those buckets span up to `now` (ms): one `HMGET` of at most
/// `minutes` fields per day they cover (two at most), in one pipeline.
pub async fn recent_processed(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    minutes: u64,
    now: u64,
) -> Result<(u64, u64)> {
    let minutes = minutes.max(1);
    let last = now / MINUTE_MS * MINUTE_MS;
    let first = last.saturating_sub((minutes - 1) * MINUTE_MS);
    let mut by_day: Vec<(u64, Vec<String>)> = Vec::new();
    for at in (first..=last).step_by(MINUTE_MS as usize) {
        let (day, field) = (at / DAY_MS, format!("{}:p", (at % DAY_MS) / MINUTE_MS));
        match by_day.last_mut() {
            Some((d, fields)) if *d == day => fields.push(field),
            _ => by_day.push((day, vec![field])),
        }
    }
    let mut pipe = redis::pipe();
    for (day, fields) in &by_day {
        pipe.cmd("HMGET")
            .arg(keys.history_minutes(queue, *day))
            .arg(fields);
    }
    // A bucket key that is not a hash of counts (written by hand) counts as empty.
    let rows: Vec<redis::RedisResult<Vec<Option<u64>>>> =
        pipe.ignore_errors().query_async(conn).await?;
    let processed = rows
        .into_iter()
        .flat_map(|row| row.unwrap_or_default())
        .map(|n| n.unwrap_or(0))
        .sum();
    Ok((processed, now.saturating_sub(first).max(1)))
}
