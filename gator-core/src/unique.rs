//! Unique jobs and debounce: at most one job per key waits or runs on a queue.
//!
//! A job type marked `#[job(unique_for = "10m")]` (or a dispatch given
//! `PendingJob::unique_for` or
//! `PendingJob::unique_key`) carries a `unique` field in its
//! payload: `{"key": "...", "until": "success", "ttl": 600000}` (see `docs/wire-format.md`).
//! Its dispatch takes a lock in the same script that enqueues or schedules it
//! (`unique_dispatch.lua`): while the lock is held, another dispatch with the same key stores
//! nothing and returns the holder's jid, flagged as a duplicate by
//! [`PendingJob::dispatch_unique`](crate::PendingJob::dispatch_unique)
//! ([`Dispatched::Duplicate`]).
//!
//! - **The key** is the job's wire name and its arguments as JSON (`send_email:["a@b.c"]`),
//!   or the key a dispatch gives. Arguments with a `HashMap` serialize in no fixed order: give
//!   such jobs a key of your own.
//! - **Scope**: one queue. The lock is `gator:{<queue>}:unique:<sha1 hex of key>` (a STRING
//!   holding the holder's jid), under the queue's hash tag, so every script that touches the
//!   job also reaches its lock on a Redis Cluster. Hashing bounds the name's length. The same
//!   key on two queues makes two locks. (On a sharded queue, a unique job is placed by its key,
//!   so duplicates meet on one shard.)
//! - **Until**: [`UniqueUntil::Success`] (the default) releases the lock in the script that
//!   records the success; [`UniqueUntil::Start`] releases it as the job starts. Either way it is
//!   also released when the job dies, is discarded by its retry strategy or is cancelled, and
//!   in any case by its TTL, on Redis's clock: a lock whose job was lost with a crashed worker
//!   does not outlive it. Retries keep the lock, and so does a job recovered from a dead worker
//!   (it is still pending). A lock only ever deletes itself for the job it names.
//! - **Debounce** (`debounce = "5s"`): the job is due 5 s after its dispatch (Redis's clock).
//!   A later dispatch with the same key while it is still scheduled replaces it (its args and
//!   every other field; its jid stays) and moves its due time to 5 s from then: BullMQ's
//!   debounce with `extend` and `replace`, the mode that runs once with the latest arguments
//!   after a burst ends (a search index rebuilt after the last edit). Once it has left the
//!   scheduled set to run, the next dispatch makes a new debounced job.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a unique job's lock lives when a dispatch asks for uniqueness without a TTL
/// (`PendingJob::unique_key` alone): long enough for most
/// jobs to finish, short enough that a lost job frees its key within the hour.
pub const DEFAULT_UNIQUE_FOR: Duration = Duration::from_secs(3600);

/// When a unique job's lock is released, besides its death, its cancellation and its TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UniqueUntil {
    /// When the job starts: a duplicate may be dispatched while it runs.
    Start,
    /// When it succeeds (the default): no duplicate while it waits, runs or retries.
    #[default]
    Success,
}

/// A job type's unique options (`#[job(unique_for = "10m", unique_until = "start",
/// debounce = "5s")]`), or a dispatch's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniqueOptions {
    /// How long the lock lives at most (its TTL in Redis).
    pub ttl: Duration,
    /// When the lock is released.
    pub until: UniqueUntil,
    /// With debounce, how long after the last dispatch the job runs.
    pub debounce: Option<Duration>,
}

impl UniqueOptions {
    /// Unique for `ttl`, until success, without debounce.
    pub const fn new(ttl: Duration) -> UniqueOptions {
        UniqueOptions {
            ttl,
            until: UniqueUntil::Success,
            debounce: None,
        }
    }

    /// Checks that the TTL and the debounce delay are usable.
    pub fn validate(&self) -> Result<()> {
        let horizon = crate::horizon::SCHEDULE_HORIZON;
        if self.ttl.as_millis() == 0 || self.ttl > horizon {
            return Err(Error::InvalidUnique {
                reason: format!(
                    "a unique lock's TTL must be at least 1 ms and at most 5 years, not {:?}",
                    self.ttl
                ),
            });
        }
        if let Some(delay) = self.debounce
            && (delay.as_millis() == 0 || delay > horizon)
        {
            return Err(Error::InvalidUnique {
                reason: format!(
                    "a debounce delay must be at least 1 ms and at most 5 years, not {delay:?}"
                ),
            });
        }
        Ok(())
    }
}

impl Default for UniqueOptions {
    fn default() -> UniqueOptions {
        UniqueOptions::new(DEFAULT_UNIQUE_FOR)
    }
}

/// The payload's `unique` field: what the scripts need to take and release the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unique {
    /// The uniqueness key (not hashed: the scripts hash it).
    pub key: String,
    /// When the lock is released.
    #[serde(default)]
    pub until: UniqueUntil,
    /// The lock's TTL, ms.
    pub ttl: u64,
    /// With debounce, the delay in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debounce: Option<u64>,
}

impl Unique {
    /// The wire field for `options` and `key`.
    pub fn new(key: String, options: &UniqueOptions) -> Unique {
        Unique {
            key,
            until: options.until,
            ttl: millis(options.ttl),
            debounce: options.debounce.map(millis),
        }
    }
}

/// The key a unique job has unless its dispatch gives one: its wire name, a colon, and its
/// arguments as JSON.
pub fn default_key(job: &str, args: &serde_json::Value) -> String {
    format!("{job}:{args}")
}

/// Checks a unique key a dispatch gives (`PendingJob::unique_key`): one that shows as itself
/// ([`gator_rules::visible_name`], the rule of every name or key a user gives), so two keys
/// that look alike are one. A key derived from the arguments ([`default_key`]) is not held to
/// it: it is data, hashed by the scripts, never a name anyone reads.
pub fn check_key(key: String) -> Result<String> {
    match gator_rules::visible_name(&key) {
        Ok(()) => Ok(key),
        Err(problem) => Err(Error::InvalidUnique {
            reason: format!(
                "unique key \"{}\": it {problem}",
                gator_rules::escape(&gator_rules::cut(&key, 100))
            ),
        }),
    }
}

/// What `PendingJob::dispatch_unique` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatched {
    /// A new job was stored; its jid.
    New(String),
    /// Nothing new was stored: a job with the same unique key holds its lock (or, debounced,
    /// was still pending and now has these arguments and a later due time); its jid.
    Duplicate(String),
}

impl Dispatched {
    /// The jid: the new job's, or the existing one's.
    pub fn jid(&self) -> &str {
        match self {
            Dispatched::New(jid) | Dispatched::Duplicate(jid) => jid,
        }
    }

    /// The jid, owned.
    pub fn into_jid(self) -> String {
        match self {
            Dispatched::New(jid) | Dispatched::Duplicate(jid) => jid,
        }
    }

    /// Whether the dispatch found an existing job instead of storing a new one.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Dispatched::Duplicate(_))
    }
}

/// The suffix of a lock's key for unique key `key`: its SHA-1 in hex, as the scripts compute
/// it with `redis.sha1hex` (see `store::keys::Keys::unique`).
pub fn digest(key: &str) -> String {
    sha1_smol::Sha1::from(key).digest().to_string()
}

/// `d` in whole ms, as the lock's script takes it.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_wire_field_names_until_in_lowercase_and_ttl_in_ms() {
        let options = UniqueOptions {
            ttl: Duration::from_secs(600),
            until: UniqueUntil::Start,
            debounce: Some(Duration::from_secs(5)),
        };
        let field = Unique::new("k".to_owned(), &options);
        assert_eq!(
            serde_json::to_value(&field).expect("serializes"),
            json!({"key": "k", "until": "start", "ttl": 600_000, "debounce": 5000})
        );
        let plain = Unique::new("k".to_owned(), &UniqueOptions::default());
        assert_eq!(
            serde_json::to_value(&plain).expect("serializes"),
            json!({"key": "k", "until": "success", "ttl": 3_600_000})
        );
    }

    #[test]
    fn the_default_key_is_the_wire_name_and_the_args() {
        assert_eq!(
            default_key("send_email", &json!(["a@b.c", 3])),
            r#"send_email:["a@b.c",3]"#
        );
    }

    #[test]
    fn the_digest_is_sha1_hex_as_redis_computes_it() {
        // redis-cli EVAL "return redis.sha1hex('abc')" 0
        assert_eq!(digest("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    }

    #[test]
    fn a_zero_ttl_or_debounce_is_refused() {
        assert!(UniqueOptions::new(Duration::ZERO).validate().is_err());
        let options = UniqueOptions {
            debounce: Some(Duration::ZERO),
            ..UniqueOptions::default()
        };
        assert!(options.validate().is_err());
        assert!(UniqueOptions::default().validate().is_ok());
    }
}
