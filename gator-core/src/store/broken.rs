//! Global keys (not of one queue: the known-queues set, the processes, the shard counts, the
//! cron index, the job catalogue, the replies' keys) that hold what Gator did not write there,
//! written by hand or by another tool. As one bad key of a queue breaks that queue only, a bad
//! global key breaks only what needs it:
//!
//! - a read of it answers as empty ([`or_empty`]): no queue known, no process, no shard, no
//!   periodic job; whatever reads it goes on with what else it has (a worker serves its
//!   `--queues`, the dashboard shows the queues it is asked about);
//! - a write that only keeps an index (registering a queue as known) is skipped;
//! - what cannot be done without it (a dispatch by name without the catalogue, a reply without
//!   the replies' keys, adding a periodic job) is refused with [`Error::BrokenKey`] naming the
//!   key, never Redis's words about a script;
//! - [`check`] names every broken global key with its reason (the overview, `gator-worker
//!   stats` and `queues`).
//!
//! Each is logged as a warning, with the key and the reason, at most once per [`LOG_EVERY`] per
//! key in a process: a worker reads some of them every poll.

use crate::error::{Error, Result, is_wrong_type, redis_text};
use crate::store::keys::Keys;
use crate::store::keys::kinds;
use redis::aio::ConnectionLike;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a process logs one broken key at most.
pub const LOG_EVERY: Duration = Duration::from_secs(600);

/// A global key that holds what Gator did not write there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BrokenKey {
    /// The key.
    pub key: String,
    /// What is wrong with it: `holds a string, not a set`.
    pub reason: String,
}

/// `read`, a read of global key `key`; empty (`T::default()`) if the key holds another type,
/// which is logged (at most once per [`LOG_EVERY`]).
pub fn or_empty<T: Default>(key: &str, read: redis::RedisResult<T>) -> Result<T> {
    match read {
        Ok(value) => Ok(value),
        Err(e) if is_wrong_type(&e) => {
            note(key, &redis_text(&e));
            Ok(T::default())
        }
        Err(e) => Err(e.into()),
    }
}

/// `error`, from a command on global key `key`: [`Error::BrokenKey`] if the key holds another
/// type (logged at most once per [`LOG_EVERY`]), else as it is.
pub fn of_key(key: &str, error: redis::RedisError) -> Error {
    if !is_wrong_type(&error) {
        return error.into();
    }
    let reason = redis_text(&error);
    note(key, &reason);
    Error::BrokenKey {
        key: key.to_owned(),
        reason,
    }
}

/// `error`, from a script that checks its global keys with the prelude's `wrong_type` (`WRONGTYPE
/// <key> holds a string, not a hash`): [`Error::BrokenKey`] naming that key, else as it is.
pub fn of_script(error: redis::RedisError) -> Error {
    if !is_wrong_type(&error) {
        return error.into();
    }
    match named_key(&redis_text(&error)) {
        Some((key, reason)) => {
            note(&key, &reason);
            Error::BrokenKey { key, reason }
        }
        None => error.into(),
    }
}

/// The key and the reason in the text of a `wrong_type` error (`"WRONGTYPE": <key> holds a
/// string, not a hash`, its script details cut off).
fn named_key(text: &str) -> Option<(String, String)> {
    let said = text.split_once("WRONGTYPE").map_or(text, |(_, s)| s);
    let (key, rest) = said
        .trim_start_matches([':', ' ', '"'])
        .split_once(" holds ")?;
    Some((key.to_owned(), format!("holds {rest}")))
}

/// Logs that `key` is broken, unless this process did so in the last [`LOG_EVERY`].
fn note(key: &str, reason: &str) {
    static LOGGED: Mutex<Option<HashMap<String, Instant>>> = Mutex::new(None);
    let mut logged = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    let logged = logged.get_or_insert_with(HashMap::new);
    let now = Instant::now();
    if logged
        .get(key)
        .is_some_and(|at| now.duration_since(*at) < LOG_EVERY)
    {
        return;
    }
    logged.insert(key.to_owned(), now);
    tracing::warn!(
        key,
        reason,
        "a global key holds data Gator did not write: what reads it sees it empty, what needs it is refused; delete or repair it with redis-cli"
    );
}

/// Every global key that holds another type than Gator writes there, with the reason: one
/// `TYPE` each, in one pipeline (on a cluster, one request per node).
pub async fn check(conn: &mut impl ConnectionLike, keys: &Keys) -> Result<Vec<BrokenKey>> {
    let fixed: Vec<(String, String)> = kinds::ALL
        .iter()
        .filter_map(|kind| Some((keys.fixed(kind)?, kind.redis_type.to_lowercase())))
        .collect();
    let mut pipe = redis::pipe();
    for (key, _) in &fixed {
        pipe.cmd("TYPE").arg(key);
    }
    let found: Vec<String> = pipe.query_async(conn).await?;
    Ok(fixed
        .into_iter()
        .zip(found)
        .filter(|((_, wanted), found)| found != "none" && found != wanted)
        .map(|((key, wanted), found)| BrokenKey {
            key,
            reason: format!(
                "holds {} {found}, not {} {wanted}",
                article(&found),
                article(&wanted)
            ),
        })
        .collect())
}

/// `a` or `an` before a Redis type's name.
fn article(kind: &str) -> &'static str {
    if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scripts_wrong_type_names_its_key() {
        let said = "\"WRONGTYPE\": gator:{catalogue}:jobs holds a string, not a hash";
        let (key, reason) = named_key(said).expect("a key is named");
        assert_eq!(key, "gator:{catalogue}:jobs");
        assert_eq!(reason, "holds a string, not a hash");
        assert_eq!(named_key("\"WRONGTYPE\": Operation against a key"), None);
    }

    #[test]
    fn every_fixed_global_key_is_checked() {
        let keys = Keys::default();
        let fixed: Vec<String> = kinds::ALL.iter().filter_map(|k| keys.fixed(k)).collect();
        for key in [
            "gator:queues",
            "gator:processes",
            "gator:shards",
            "gator:cron",
            "gator:{catalogue}:jobs",
            "gator:{replies}:stats",
        ] {
            assert!(fixed.iter().any(|k| k == key), "{key} is not checked");
        }
        assert!(!fixed.iter().any(|k| k.contains("{<") || k.ends_with(':')));
    }
}
