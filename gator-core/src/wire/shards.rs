//! How a shard of a queue is named, and which shard a key goes to: pure functions that the
//! store's key names, the client's placement and a job's context all use, importing nothing
//! above them.

use crate::error::{Error, Result};

/// Separates a queue's name from its shard number: `default#3`. Never valid in a queue name.
pub const SHARD_SEPARATOR: char = '#';

/// The most shards a queue may have.
pub const MAX_SHARDS: u32 = 1024;

/// The name of shard `shard` of `queue`: `default#3`.
pub fn shard_queue(queue: &str, shard: u32) -> String {
    format!("{queue}{SHARD_SEPARATOR}{shard}")
}

/// The queue a stored queue belongs to: `default` for `default#3`, the name itself otherwise.
pub fn logical_queue(name: &str) -> &str {
    match name.rsplit_once(SHARD_SEPARATOR) {
        Some((queue, shard)) if !shard.is_empty() && shard.bytes().all(|b| b.is_ascii_digit()) => {
            queue
        }
        _ => name,
    }
}

/// The shard of `count` that a job with shard key `key` goes to: FNV-1a (64-bit) of the key's
/// UTF-8 bytes, modulo `count`. Documented in `docs/wire-format.md` so producers in other
/// languages place keys the same way.
pub fn shard_for_key(key: &str, count: u32) -> u32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (hash % u64::from(count.max(1))) as u32
}

/// Checks a shard count asked for by an operator.
pub fn validate_count(count: u32) -> Result<()> {
    if (1..=MAX_SHARDS).contains(&count) {
        Ok(())
    } else {
        Err(Error::InvalidShardCount {
            count,
            max: MAX_SHARDS,
        })
    }
}
