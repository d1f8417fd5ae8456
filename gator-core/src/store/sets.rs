//! The per-queue sorted sets seen as collections of jobs: list, find, move back to the queue,
//! delete. What the admin API and the `gator-worker` subcommands use.

use crate::error::Result;
use crate::payload::now_ms;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;

pub(crate) use super::set_entry::entry;

/// How deep `Admin::list_set` pages by offset over several queues merged, or over a scheduled
/// set and its minutes' lists (`store::later`): it reads this many entries of each at most.
pub const MAX_MERGED_DEPTH: usize = 2000;
pub use super::set_entry::{SetEntry, SetKind, Start};

/// Up to `count` entries of `kind` for `queue` from `offset`, lowest score first (of a
/// scheduled set whose minutes' lists hold jobs, at most [`MAX_MERGED_DEPTH`] deep:
/// `store::later::list`).
pub async fn list(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    queue: &str,
    offset: usize,
    count: usize,
) -> Result<Vec<SetEntry>> {
    // Redis reads an index past i64's range as an error; no set is that long.
    if count == 0 || offset > i64::MAX as usize {
        return Ok(Vec::new());
    }
    if kind == SetKind::Scheduled {
        let depth = MAX_MERGED_DEPTH;
        let merged = super::later::list(conn, keys, queue, (offset, count), depth).await?;
        if let Some(entries) = merged {
            return Ok(entries);
        }
    }
    let stop = i64::try_from(offset.saturating_add(count) - 1).unwrap_or(i64::MAX);
    let mut range = redis::cmd("ZRANGE");
    range.arg(kind.key(keys, queue)).arg(offset).arg(stop);
    entries(conn, kind, queue, range).await
}

/// Up to `count` entries of `kind` for each queue from where it starts, lowest score first:
/// one `ZRANGE ... BYSCORE LIMIT` a queue, O(log n + skip + count) however deep the page, all
/// in one pipeline. A queue whose set is not one (a key written by hand) reads as empty: its
/// row in the queue listing says it is broken.
pub async fn pages(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    starts: &[(&str, Start)],
    count: usize,
) -> Result<Vec<Vec<SetEntry>>> {
    if starts.is_empty() {
        return Ok(Vec::new());
    }
    if kind == SetKind::Scheduled {
        let read = super::later::set_pages(conn, keys, starts, "+inf", count).await?;
        return Ok(read.into_iter().map(|r| r.unwrap_or_default()).collect());
    }
    let mut pipe = redis::pipe();
    for (queue, from) in starts {
        by_score(&mut pipe, &kind.key(keys, queue), from, "+inf", count);
    }
    let read: Vec<redis::RedisResult<Vec<(String, f64)>>> =
        pipe.ignore_errors().query_async(conn).await?;
    Ok(starts
        .iter()
        .zip(read)
        .map(|((queue, _), rows)| {
            let rows = rows.unwrap_or_default().into_iter();
            rows.map(|(raw, score)| entry(kind, queue, raw, score))
                .collect()
        })
        .collect())
}

/// Adds to `pipe` a read of up to `count` entries of set `key` from `from` up to score `max`
/// (`+inf`, or a score: inclusive), lowest first: `ZRANGE ... BYSCORE LIMIT`, O(log n + skip +
/// count).
fn by_score(pipe: &mut redis::Pipeline, key: &str, from: &Start, max: &str, count: usize) {
    let min = match from.score {
        None => "-inf".to_owned(),
        Some(score) if from.inclusive => score.to_string(),
        Some(score) => format!("({score}"),
    };
    pipe.cmd("ZRANGE").arg(key).arg(min).arg(max);
    pipe.arg("BYSCORE").arg("LIMIT").arg(from.skip).arg(count);
    pipe.arg("WITHSCORES");
}

/// Up to `count` entries of `kind` for `queue` from `from`, with a score of at most `until`,
/// lowest first: one page of a bulk action's sweep (`admin::bulk`), read in O(log n + skip +
/// count) however deep it is. A set that is not one is [`crate::Error::BrokenQueue`].
pub async fn sweep(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    queue: &str,
    (from, until): (&Start, f64),
    count: usize,
) -> Result<Vec<SetEntry>> {
    if kind == SetKind::Scheduled {
        let until = until.to_string();
        let read = super::later::set_pages(conn, keys, &[(queue, *from)], &until, count).await?;
        let rows = read.into_iter().next().unwrap_or(Ok(Vec::new()));
        return rows.map_err(|e| crate::error::Error::from(e).of_queue(queue));
    }
    let mut pipe = redis::pipe();
    by_score(
        &mut pipe,
        &kind.key(keys, queue),
        from,
        &until.to_string(),
        count,
    );
    let (rows,): (Vec<(String, f64)>,) = pipe
        .query_async(conn)
        .await
        .map_err(|e| crate::error::Error::from(e).of_queue(queue))?;
    Ok(rows
        .into_iter()
        .map(|(raw, score)| entry(kind, queue, raw, score))
        .collect())
}

/// The highest score in `kind` for `queue`, `None` if the set is empty: where a bulk action's
/// sweep of it stops, so that it does not chase entries added after it began.
pub async fn highest(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    queue: &str,
) -> Result<Option<f64>> {
    let rows: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(kind.key(keys, queue))
        .arg(-1)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await
        .map_err(|e| crate::error::Error::from(e).of_queue(queue))?;
    let highest = rows.first().map(|(_, score)| *score);
    if kind != SetKind::Scheduled {
        return Ok(highest);
    }
    let later = super::later::last_start(conn, keys, queue).await?;
    Ok(highest.into_iter().chain(later).reduce(f64::max))
}

/// The entries a `ZRANGE` of `kind` for `queue` lists, with their scores.
async fn entries(
    conn: &mut impl ConnectionLike,
    kind: SetKind,
    queue: &str,
    mut range: redis::Cmd,
) -> Result<Vec<SetEntry>> {
    let rows: Vec<(String, f64)> = range.arg("WITHSCORES").query_async(conn).await?;
    Ok(rows
        .into_iter()
        .map(|(raw, score)| entry(kind, queue, raw, score))
        .collect())
}

/// Up to `count` members of list or sorted set `key` (`sorted`) from `offset`, with their
/// scores for a sorted set: what a search reads, a range at a time.
pub async fn range(
    conn: &mut impl ConnectionLike,
    key: &str,
    sorted: bool,
    offset: usize,
    count: usize,
) -> Result<Vec<(String, Option<f64>)>> {
    let stop = offset.saturating_add(count).saturating_sub(1);
    if sorted {
        let rows: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(offset)
            .arg(stop)
            .arg("WITHSCORES")
            .query_async(conn)
            .await?;
        return Ok(rows.into_iter().map(|(raw, s)| (raw, Some(s))).collect());
    }
    let rows: Vec<String> = redis::cmd("LRANGE")
        .arg(key)
        .arg(offset)
        .arg(stop)
        .query_async(conn)
        .await?;
    Ok(rows.into_iter().map(|raw| (raw, None)).collect())
}

/// How many entries `kind` holds for each of `queues`, in one pipeline (a set that is not
/// one counts 0, as in [`pages`]).
pub async fn lens(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    kind: SetKind,
    queues: &[String],
) -> Result<Vec<usize>> {
    if queues.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for queue in queues {
        pipe.zcard(kind.key(keys, queue));
        if kind == SetKind::Scheduled {
            super::later::count(&mut pipe, keys, queue);
        }
    }
    let read: Vec<redis::RedisResult<Option<usize>>> =
        pipe.ignore_errors().query_async(conn).await?;
    let counts = read.into_iter().map(|n| n.ok().flatten().unwrap_or(0));
    Ok(match kind {
        // The set's and the lists' counts, in pairs.
        SetKind::Scheduled => {
            let counts: Vec<usize> = counts.collect();
            counts.chunks(2).map(|pair| pair.iter().sum()).collect()
        }
        _ => counts.collect(),
    })
}

/// Moves `entry` back to the tail of its queue now. From the dead set the job starts over
/// (attempt 0) without its deadline (`expires_at`: the operator asked for it to run, and an
/// expired job would otherwise expire again at once); from the scheduled or retry set it
/// keeps its count and its deadline. A dead entry a worker wrote around a payload too deep to
/// parse goes back as that payload came ([`crate::payload::Payload::unread_text`]). Returns
/// false if the entry was no longer in the set (someone else moved or deleted it).
pub async fn move_to_queue(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    entry: &SetEntry,
) -> Result<bool> {
    // Not a payload: there is nothing a worker could run. Keep it where it is.
    let Some(payload) = &entry.payload else {
        return Ok(false);
    };
    let requeued = match payload.unread_text() {
        // A payload too deep to parse, which a worker wrapped: back as it came.
        Some(text) => text.to_owned(),
        None => {
            let mut payload = payload.clone();
            if entry.kind == SetKind::Dead {
                payload.attempt = 0;
                payload.expires_at = None;
                payload.on_expire = None;
            }
            payload.enqueued_at = now_ms();
            payload.to_json()
        }
    };
    let mut script = scripts::MOVE_TO_QUEUE.key(entry.kind.key(keys, &entry.queue));
    script
        .key(keys.queue(&entry.queue))
        .arg(&entry.raw)
        .arg(requeued);
    if let Some(due) = super::later::listed_due(entry) {
        script.arg(due);
    }
    let moved: i64 = script.invoke_async(conn).await?;
    Ok(moved == 1)
}

/// Removes `entry` from its set. Returns false if it was already gone. A dead chain step
/// takes its chain's waiting steps with it: nothing could resume them any more.
pub async fn delete(conn: &mut impl ConnectionLike, keys: &Keys, entry: &SetEntry) -> Result<bool> {
    let removed = remove(conn, keys, std::slice::from_ref(entry)).await? == 1;
    if removed {
        super::chain::forget(conn, keys, &orphaned_chains(std::slice::from_ref(entry))).await?;
    }
    Ok(removed)
}

/// Removes `entries` (all of one set) from it with their jobs' status records (`delete.lua`;
/// one that may wait in its minute's list, from there if the set does not hold it); returns
/// how many were still there.
async fn remove(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    entries: &[SetEntry],
) -> Result<usize> {
    let Some(first) = entries.first() else {
        return Ok(0);
    };
    let members: Vec<&str> = entries.iter().map(|entry| entry.raw.as_str()).collect();
    let removed: String = scripts::DELETE
        .key(first.kind.key(keys, &first.queue))
        .arg(super::later::listed_dues(entries))
        .arg(members)
        .invoke_async(conn)
        .await?;
    Ok(removed.bytes().filter(|b| *b == b'1').count())
}

/// Removes `entries` (all of one set) from it in one script; returns how many were still
/// there. The waiting lists of the dead chain steps among them go with them.
pub async fn delete_many(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    entries: &[SetEntry],
) -> Result<usize> {
    let removed = remove(conn, keys, entries).await?;
    super::chain::forget(conn, keys, &orphaned_chains(entries)).await?;
    Ok(removed)
}

/// The chains whose waiting lists hang on these dead entries: chain steps with a next step.
fn orphaned_chains(entries: &[SetEntry]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|entry| entry.kind == SetKind::Dead)
        .filter_map(|entry| entry.payload.as_ref()?.chain.as_ref())
        .filter(|link| link.next_jid.is_some())
        .map(|link| (link.list_queue.clone(), link.id.clone()))
        .collect()
}
