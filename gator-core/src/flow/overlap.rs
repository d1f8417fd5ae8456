//! No-overlap keys: `#[job(no_overlap)]` lets at most one job of a queue with a given key run
//! at once, across every worker process; the others wait parked (not retried, not polled).
//!
//! **The key.** By default it is the job's wire name and its arguments as canonical JSON
//! (object keys sorted), `resize:["a.png",800]`, so a job excludes only the jobs that would do
//! the same work. `#[job(no_overlap, overlap_key = account)]` keys by one argument instead,
//! and a dispatch may set its own with `PendingJob::overlap_key`. A key longer than
//! [`MAX_KEY_BYTES`] is replaced by its SHA-1 digest (its wire name kept in front for the
//! default key), so any arguments give a key the queue can store.
//!
//! **The lock.** It lives in the queue's slot: the HASH `gator:{<queue>}:overlap` maps each key
//! to the jid of the job that holds it. `admit.lua` starts a parked job with a key only if no
//! other job holds it, and takes the lock in the same step; otherwise the job's parking key
//! (which includes the overlap key, so no job of another key waits behind it) waits in
//! `gator:{<queue>}:overlap_wait:<key>` until the holder settles. Every way a job of a
//! controlled queue settles (success, retry, death, cancel, a wait for a reply, a put-back)
//! releases its lock in the script that takes it out of flight, and wakes the waiters.
//!
//! **Crashes.** The lock is held by the holder's process lease: the job is in that process's
//! in-flight list, and the recovery that puts a dead process's jobs back releases their locks
//! in the same script. A SIGKILLed holder delays its key's other jobs by one lease period.
//!
//! **Scope.** A key excludes only jobs on the same queue (one slot per script): the same key
//! on two queues is two locks. A critical job cannot be `no_overlap`.

use serde::Serialize;

/// The longest overlap key stored as is; a longer one is replaced by its digest. The longest
/// name flow control takes ([`gator_rules::flow_name`]), so a fitted key always passes it.
pub const MAX_KEY_BYTES: usize = gator_rules::MAX_FLOW_NAME;

/// `key` as the queue stores it: itself if it is at most [`MAX_KEY_BYTES`] long, else
/// `sha1:` and the hex SHA-1 digest of it. (A dispatch still refuses an empty key or one with
/// an invisible character, [`gator_rules::is_invisible`], which a digest would hide.)
pub fn fit_key(key: impl Into<String>) -> String {
    let key = key.into();
    if key.len() <= MAX_KEY_BYTES || key.chars().any(gator_rules::is_invisible) {
        return key;
    }
    format!("sha1:{}", digest(&key))
}

/// The default overlap key of a job named `name` with `args`: `<name>:<canonical args JSON>`,
/// or `<name>:sha1:<digest of the JSON>` if that is too long or holds a character a key may
/// not ([`gator_rules::visible_name`]) (and [`fit_key`] of it all if the name alone is too
/// long).
pub fn default_key<A: Serialize + ?Sized>(name: &str, args: &A) -> String {
    // Arguments that do not serialize fail the dispatch anyway (encode); the key is moot.
    let json = serde_json::to_value(args)
        .map(|v| sorted(v).to_string())
        .unwrap_or_default();
    let key = format!("{name}:{json}");
    // Arguments are data, not a name someone chose: a text with a joiner (an emoji family) or a
    // non-breaking space is digested, not refused as a key given so would be.
    if key.len() <= MAX_KEY_BYTES && gator_rules::visible_name(&key).is_ok() {
        return key;
    }
    fit_key(format!("{name}:sha1:{}", digest(&json)))
}

/// `value` with every object's keys in sorted order, so equal arguments give one key whatever
/// order a map wrote them in (also if some crate turns on serde_json's `preserve_order`).
fn sorted(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn digest(text: &str) -> String {
    sha1_smol::Sha1::from(text).digest().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn the_default_key_is_the_wire_name_and_the_arguments() {
        assert_eq!(
            default_key("resize", &("a.png", 800)),
            r#"resize:["a.png",800]"#
        );
    }

    #[test]
    fn equal_arguments_give_one_key_whatever_their_order() {
        let a: HashMap<&str, u32> = [("x", 1), ("y", 2), ("z", 3)].into();
        let b: HashMap<&str, u32> = [("z", 3), ("x", 1), ("y", 2)].into();
        assert_eq!(default_key("j", &(a,)), default_key("j", &(b,)));
        assert_eq!(default_key("j", &(a_map(),)), r#"j:[{"x":1,"y":2}]"#);
    }

    fn a_map() -> HashMap<&'static str, u32> {
        [("y", 2), ("x", 1)].into()
    }

    #[test]
    fn a_long_key_is_replaced_by_its_digest() {
        let long = "x".repeat(500);
        let key = default_key("report", &(long.as_str(),));
        assert!(key.starts_with("report:sha1:"), "{key}");
        assert_eq!(key.len(), "report:sha1:".len() + 40);
        assert_ne!(key, default_key("report", &(format!("{long}y"),)));
        assert_eq!(fit_key("short"), "short");
        let fitted = fit_key(long);
        assert!(
            fitted.starts_with("sha1:") && fitted.len() == 45,
            "{fitted}"
        );
        let named = default_key(&"n".repeat(200), &(1,));
        assert!(named.starts_with("sha1:"), "{named}");
    }
}
