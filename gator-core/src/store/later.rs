//! Jobs scheduled beyond the horizon, kept in one list per minute of their due time instead of
//! the scheduled set: a list entry costs its payload's bytes and a few more, a member of a
//! sorted set ~110 more, so a backlog scheduled far ahead costs about what the same jobs queued
//! would (`lua/later_lib.lua`). Each job's status record is written as for any scheduled job.
//!
//! The scheduled set stays what promotion reads: each promotion pass (`promote_due.lua`) first
//! moves the minutes that start within ten seconds into it, each job scored by its due time,
//! so a job still starts within a few ms of its due time. Everything that finds one job (cancel,
//! run now, delete, the admin's find) finds it in its list ([`find`]) and acts on it in one
//! script that looks in the set, then in the list ([`listed_due`]); pages, sweeps and counts of
//! the scheduled set read both ([`pages`], [`count`]), and a search reads the lists a range at
//! a time ([`range`]).

use super::keys::Keys;
use super::scripts;
use super::set_entry::{self, SetEntry, SetKind, Start};
use crate::error::{Error, Result};
use redis::aio::ConnectionLike;
use std::sync::OnceLock;

/// A job due more than this after Redis's now when it is scheduled waits in its minute's list.
pub const HORIZON_MS: u64 = 120_000;

/// The width of one list: a minute (`LATER_SLICE_MS` in `lua/later_lib.lua`).
pub const SLICE_MS: u64 = 60_000;

/// Entries of a minute's list read per call while finding a jid in it.
const FIND_READ: usize = 1000;

/// The variable that sets the horizon in ms ([`horizon_ms`]).
pub const HORIZON_ENV: &str = "GATOR_LATER_AFTER_MS";

/// The horizon this process schedules with: [`HORIZON_MS`], or [`HORIZON_ENV`] if set (a test
/// that must see a job go through the lists without waiting minutes sets it low; a value past
/// any delay, such as 1000000000000000, keeps every job in the scheduled set). A value that is
/// not a whole number of ms is [`Error::InvalidSetting`], at every schedule.
pub fn horizon_ms() -> Result<u64> {
    static HORIZON: OnceLock<std::result::Result<u64, String>> = OnceLock::new();
    let read = HORIZON.get_or_init(|| match std::env::var(HORIZON_ENV) {
        Ok(value) => value.trim().parse().map_err(|_| value),
        Err(_) => Ok(HORIZON_MS),
    });
    read.clone().map_err(|value| Error::InvalidSetting {
        name: HORIZON_ENV,
        value,
        expected: "a whole number of milliseconds, such as 120000",
    })
}

/// The payload of job `jid` of `queue`, due at `due_ms` (its status record's), if its minute's
/// list holds it: read-only, a bounded read per call (`later_find.lua`).
pub async fn find(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
    due_ms: u64,
) -> Result<Option<String>> {
    let mut from: u64 = 0;
    loop {
        let (found, rest): (u8, Option<String>) = scripts::LATER_FIND
            .key(keys.scheduled(queue))
            .arg(jid)
            .arg(due_ms)
            .arg(from)
            .arg(FIND_READ)
            .invoke_async(conn)
            .await
            .map_err(|e| Error::from(e).of_queue(queue))?;
        match (found, rest) {
            (1, Some(payload)) => return Ok(Some(payload)),
            (2, Some(next)) => from = next.parse().unwrap_or(u64::MAX),
            _ => return Ok(None),
        }
    }
}

/// The start of the minute `due_ms` falls in: its list's, and where a page lists its jobs.
pub fn minute_of(due_ms: u64) -> u64 {
    due_ms - due_ms % SLICE_MS
}

/// Whether an entry listed at `score` with due time `due_ms` may come from a minute's list:
/// such an entry is listed at its minute's start, and a set's entry at its due time.
pub fn may_be_listed_later(score: f64, due_ms: u64) -> bool {
    score.fract() == 0.0 && (score as u64).is_multiple_of(SLICE_MS) && score as u64 <= due_ms
}

/// One entry of a merged page: member, listing score, due time.
pub type Row = (String, f64, u64);

/// Where one queue's merged page starts and ends: `ZRANGE ... BYSCORE` bounds, and how many
/// entries at an inclusive lowest score to step over.
pub struct Bounds {
    /// The lowest score: `-inf`, `<score>` or `(<score>`.
    pub min: String,
    /// The highest score: `+inf` or `<score>`.
    pub max: String,
    /// Entries at an inclusive `min` already shown.
    pub skip: usize,
}

/// A page of each queue's scheduled jobs, the set's and the lists' merged, `count` at most
/// each (`scheduled_page.lua`), in one pipeline. A queue whose set is not one reads as its
/// error, as the other sets' pages do.
pub async fn pages(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queues: &[(&str, Bounds)],
    count: usize,
) -> Result<Vec<redis::RedisResult<Vec<Row>>>> {
    let mut pipe = redis::pipe();
    for (queue, bounds) in queues {
        pipe.cmd("EVALSHA")
            .arg(scripts::SCHEDULED_PAGE.get_hash())
            .arg(1)
            .arg(keys.scheduled(queue))
            .arg(&bounds.min)
            .arg(&bounds.max)
            .arg(bounds.skip)
            .arg(count);
    }
    let read: Vec<redis::RedisResult<Vec<Row>>> =
        pipe.clone().ignore_errors().query_async(conn).await?;
    let unloaded = |r: &redis::RedisResult<Vec<Row>>| {
        r.as_ref()
            .is_err_and(|e| e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript))
    };
    if !read.iter().any(unloaded) {
        return Ok(read);
    }
    // A restarted Redis has forgotten the script: load it, once, and read again.
    scripts::SCHEDULED_PAGE.load_async(conn).await?;
    Ok(pipe.ignore_errors().query_async(conn).await?)
}

/// Up to `count` jobs of a queue's lists (`index_key`, [`Keys::later`]) from position `at`
/// (see [`position`]): each with its due time and the position after it, for a search
/// (`later_range.lua`).
pub async fn range(
    conn: &mut impl ConnectionLike,
    index_key: &str,
    at: u64,
    count: usize,
) -> Result<Vec<(String, u64, u64)>> {
    let (rank, index) = (at >> 32, at & 0xffff_ffff);
    let rows: Vec<(String, u64, u64, u64)> = scripts::LATER_RANGE
        .key(index_key)
        .arg(rank)
        .arg(index)
        .arg(count)
        .invoke_async(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(raw, due, rank, index)| (raw, due, position(rank, index)))
        .collect())
}

/// A search's position in the lists: the minute's rank in the index, then the index in its
/// list.
pub fn position(rank: u64, index: u64) -> u64 {
    (rank << 32) | index.min(0xffff_ffff)
}

/// How many jobs `queue`'s lists hold: one `GET` added to `pipe`.
pub fn count(pipe: &mut redis::Pipeline, keys: &Keys, queue: &str) {
    pipe.get(keys.later_count(queue));
}

/// `store::sets::pages` of the scheduled set: each queue's merged page from its start, up
/// to score `max`, as set entries (a listed job's `score` its minute's start, its `score_ms`
/// its due time). A queue whose set is not one reads as empty (`broken`: as its error).
pub(super) async fn set_pages(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    starts: &[(&str, Start)],
    max: &str,
    count: usize,
) -> Result<Vec<redis::RedisResult<Vec<SetEntry>>>> {
    let bounds: Vec<(&str, Bounds)> = starts
        .iter()
        .map(|(queue, from)| {
            let min = match from.score {
                None => "-inf".to_owned(),
                Some(score) if from.inclusive => score.to_string(),
                Some(score) => format!("({score}"),
            };
            let (max, skip) = (max.to_owned(), from.skip);
            (*queue, Bounds { min, max, skip })
        })
        .collect();
    let read = pages(conn, keys, &bounds, count).await?;
    Ok(starts
        .iter()
        .zip(read)
        .map(|((queue, _), rows)| {
            rows.map(|rows| {
                rows.into_iter()
                    .map(|(raw, score, due)| SetEntry {
                        score_ms: due,
                        ..set_entry::entry(SetKind::Scheduled, queue, raw, score)
                    })
                    .collect()
            })
        })
        .collect())
}

/// The due time of `entry` if it may wait in its minute's list rather than in the scheduled
/// set: what an action's script (`move_to_queue.lua`, `delete.lua`, `cancel.lua`) is given to
/// find it there, in the same step, when the set does not hold it.
pub fn listed_due(entry: &SetEntry) -> Option<u64> {
    (entry.kind == SetKind::Scheduled && may_be_listed_later(entry.score, entry.score_ms))
        .then_some(entry.score_ms)
}

/// [`listed_due`] of each of `entries`, as `delete.lua` takes them: space-separated, `-` for
/// an entry of the set only; empty when none may be listed.
pub(super) fn listed_dues(entries: &[SetEntry]) -> String {
    let dues: Vec<Option<u64>> = entries.iter().map(listed_due).collect();
    if dues.iter().all(Option::is_none) {
        return String::new();
    }
    let text: Vec<String> = dues
        .iter()
        .map(|due| due.map_or_else(|| "-".to_owned(), |due| due.to_string()))
        .collect();
    text.join(" ")
}

/// The start of the last minute with a list of `queue`'s, if any: where a sweep of the
/// scheduled set ends, with its highest score.
pub(super) async fn last_start(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
) -> Result<Option<f64>> {
    let rows: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(keys.later(queue))
        .arg(-1)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await
        .map_err(|e| Error::from(e).of_queue(queue))?;
    Ok(rows.first().map(|(_, score)| *score))
}

/// `store::sets::list` of a queue's scheduled jobs when its minutes' lists hold any: the
/// set's and the lists' merged, from `offset`, which needs the first `offset + count` of them
/// read, so at most `depth` deep (else [`Error::InvalidArgs`]: page with a cursor). `None`
/// while the lists hold nothing: the set alone answers, by rank, at any offset.
pub(super) async fn list(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    (offset, count): (usize, usize),
    depth: usize,
) -> Result<Option<Vec<SetEntry>>> {
    let held: Option<u64> = redis::cmd("GET")
        .arg(keys.later_count(queue))
        .query_async(conn)
        .await?;
    if held.unwrap_or(0) == 0 {
        return Ok(None);
    }
    let wanted = offset.saturating_add(count);
    if wanted > depth {
        return Err(Error::InvalidArgs {
            reason: format!(
                "offset {offset} is past the first {depth} scheduled jobs of {queue}, some of them \
                 due beyond the horizon: page with a cursor (Admin::set_page)"
            ),
        });
    }
    let from = Start {
        score: None,
        inclusive: true,
        skip: 0,
    };
    let read = set_pages(conn, keys, &[(queue, from)], "+inf", wanted).await?;
    let rows = read.into_iter().next().unwrap_or(Ok(Vec::new()));
    let rows = rows.map_err(|e| Error::from(e).of_queue(queue))?;
    Ok(Some(rows.into_iter().skip(offset).collect()))
}
