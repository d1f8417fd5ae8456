//! Periodic entries in Redis (see `cron`): the global index `gator:cron` (name →
//! queue), and in each queue's slot the definitions, the last fired tick and the pauses. The
//! index is written before an entry and removed after it, each by a command of its own (a global
//! key is never in a per-queue script): a failure in between leaves an index entry that points
//! at nothing, which readers skip, never an entry nobody sees.

use crate::error::Result;
use crate::payload::Payload;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;
use std::collections::{BTreeMap, HashMap};

/// One entry as read from Redis, its definition not yet parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEntry {
    /// The entry's name.
    pub name: String,
    /// The queue its definition lives in (and its jobs go to).
    pub queue: String,
    /// Its definition, JSON (`cron::CronEntry`).
    pub definition: String,
    /// The last tick fired (ms, Redis time); at first, when the entry was added.
    pub fired: Option<u64>,
    /// When it was paused (ms, Redis time), if it is.
    pub paused_at: Option<u64>,
}

/// What `cron_fire.lua` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fire {
    /// The job was pushed to its queue.
    Pushed,
    /// This tick, or a later one, was already fired (by this or another worker).
    AlreadyFired,
    /// The entry is paused.
    Paused,
    /// There is no such entry (it was removed meanwhile).
    Gone,
    /// The tick is after Redis's clock.
    Early,
}

/// The queue entry `name` lives in, from the index (none if the index is not a hash,
/// [`super::broken`]).
pub async fn queue_of(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    name: &str,
) -> Result<Option<String>> {
    let read = redis::cmd("HGET")
        .arg(keys.cron_index())
        .arg(name)
        .query_async(conn)
        .await;
    super::broken::or_empty(&keys.cron_index(), read)
}

/// Stores entry `name` with `definition` in `queue`'s slot (`cron_add.lua`), after recording it
/// in the index; an entry of that name in another queue is removed first. Returns the entry's
/// last fired tick (now, Redis time, for a new entry).
pub async fn add(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    name: &str,
    queue: &str,
    definition: &str,
) -> Result<u64> {
    if let Some(old) = queue_of(conn, keys, name).await?
        && old != queue
    {
        forget_in(conn, keys, name, &old).await?;
    }
    redis::cmd("HSET")
        .arg(keys.cron_index())
        .arg(name)
        .arg(queue)
        .query_async::<()>(conn)
        .await
        .map_err(|e| super::broken::of_key(&keys.cron_index(), e))?;
    Ok(scripts::CRON_ADD
        .key(keys.cron_entries(queue))
        .key(keys.cron_fired(queue))
        .arg(name)
        .arg(definition)
        .invoke_async(conn)
        .await?)
}

/// Removes entry `name` (its definition, last tick and pause, then its index entry). Returns
/// whether there was one.
pub async fn remove(conn: &mut impl ConnectionLike, keys: &Keys, name: &str) -> Result<bool> {
    let Some(queue) = queue_of(conn, keys, name).await? else {
        return Ok(false);
    };
    let existed = forget_in(conn, keys, name, &queue).await?;
    redis::cmd("HDEL")
        .arg(keys.cron_index())
        .arg(name)
        .query_async::<()>(conn)
        .await?;
    Ok(existed)
}

/// Deletes entry `name` from `queue`'s slot, in one `MULTI`; whether its definition was there.
async fn forget_in(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    name: &str,
    queue: &str,
) -> Result<bool> {
    let (deleted, _, _): (u32, u32, u32) = redis::pipe()
        .atomic()
        .hdel(keys.cron_entries(queue), name)
        .hdel(keys.cron_fired(queue), name)
        .hdel(keys.cron_paused(queue), name)
        .query_async(conn)
        .await?;
    Ok(deleted > 0)
}

/// Every entry, by name. Index entries whose queue holds no definition (a removal or a move
/// that stopped halfway) are skipped.
pub async fn list(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<Vec<StoredEntry>> {
    let read = redis::cmd("HGETALL")
        .arg(keys.cron_index())
        .query_async(conn)
        .await;
    let index: HashMap<String, String> = super::broken::or_empty(&keys.cron_index(), read)?;
    let mut by_queue: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (name, queue) in &index {
        by_queue.entry(queue).or_default().push(name);
    }
    let mut entries = Vec::new();
    for (queue, names) in by_queue {
        // One MULTI per queue (one slot): a definition and its state read at one moment.
        let (mut definitions, fired, paused): (
            HashMap<String, String>,
            HashMap<String, u64>,
            HashMap<String, u64>,
        ) = redis::pipe()
            .atomic()
            .hgetall(keys.cron_entries(queue))
            .hgetall(keys.cron_fired(queue))
            .hgetall(keys.cron_paused(queue))
            .query_async(conn)
            .await?;
        for name in names {
            if let Some(definition) = definitions.remove(name) {
                entries.push(StoredEntry {
                    name: name.to_owned(),
                    queue: queue.to_owned(),
                    definition,
                    fired: fired.get(name).copied(),
                    paused_at: paused.get(name).copied(),
                });
            }
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// Pauses (`pause`) or resumes entry `name` of `queue` in one script on Redis time
/// (`cron_pause.lua`): a resumed entry fires its next tick, not one it missed while paused.
/// Returns whether the entry exists.
pub async fn set_paused(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    name: &str,
    queue: &str,
    pause: bool,
) -> Result<bool> {
    let found: i64 = scripts::CRON_PAUSE
        .key(keys.cron_entries(queue))
        .key(keys.cron_fired(queue))
        .key(keys.cron_paused(queue))
        .arg(name)
        .arg(if pause { "pause" } else { "resume" })
        .invoke_async(conn)
        .await?;
    Ok(found == 1)
}

/// Pushes `payload` for entry `name` (`cron_fire.lua`): for `tick` (ms, at or before Redis's
/// clock) only if no worker fired it or a later tick yet and the entry is not paused; with
/// `None`, now, whatever the ticks and the pause (`gator-worker cron run`).
pub async fn fire(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    name: &str,
    tick: Option<u64>,
    payload: &Payload,
) -> Result<Fire> {
    let queue = &payload.queue;
    let flags = if payload.flow.as_ref().is_some_and(|f| !f.is_empty()) {
        "f"
    } else {
        "-"
    };
    let mut invocation = scripts::CRON_FIRE.key(keys.cron_entries(queue));
    invocation
        .key(keys.cron_fired(queue))
        .key(keys.cron_paused(queue))
        .key(keys.queue(queue))
        .arg(name);
    match tick {
        Some(ms) => invocation.arg(ms),
        None => invocation.arg("now"),
    };
    let code: i64 = invocation
        .arg(payload.to_json())
        .arg(flags)
        .invoke_async(conn)
        .await?;
    Ok(match code {
        1 => Fire::Pushed,
        0 => Fire::AlreadyFired,
        -1 => Fire::Paused,
        -3 => Fire::Early,
        _ => Fire::Gone,
    })
}
