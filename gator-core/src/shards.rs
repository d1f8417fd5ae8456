//! Sharded queues: one hot queue split into N lists, each with its own hash tag, so that on
//! Redis Cluster the shards spread over the masters instead of binding the queue to one node.
//!
//! Queue `default` with 4 shards is stored as the queues `default#0` … `default#3` (keys
//! `gator:{default#0}:queue`, …). The number of shards lives in Redis, in the hash
//! `gator:shards` (queue → N), set with `gator-worker shards default 4`: producers and workers
//! read it from there, so no deploy has to agree on it.
//!
//! - **Producers** put a job on shard `fnv1a64(shard key) mod N` when it has a key
//!   (`PendingJob::shard_key`): jobs with the same key land on one list and keep
//!   their order. Without a key, a client deals its jobs round-robin over the shards.
//! - **Workers** serve `default` as one queue: its weight and strict place apply to the whole
//!   queue, and each fetch tries the shards in random order. They also drain the unsharded
//!   list `default` and any shard the known-queues set still lists, so that no job is
//!   stranded when the count changes.
//! - **Changing the count.** Jobs already queued stay on their lists and are drained as usual;
//!   new jobs are placed by the new count. While both exist, jobs of one key may run out of
//!   order (old and new lists are drained side by side). Clients re-read the count every
//!   [`SHARD_COUNT_TTL`].

use crate::error::Result;
use crate::job::Encoded;
use crate::payload::Payload;
use crate::store;
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub use crate::wire::shards::{
    MAX_SHARDS, SHARD_SEPARATOR, logical_queue, shard_for_key, shard_queue, validate_count,
};

/// How long a client trusts the shard count it read: a change reaches every producer within
/// this long. (Only this host's clock is involved, deciding when to read again.)
pub const SHARD_COUNT_TTL: Duration = Duration::from_secs(5);

/// A client's view of the shard counts, read from Redis at most every [`SHARD_COUNT_TTL`]
/// per queue, and the round-robin counter for jobs without a key.
#[derive(Debug, Default)]
pub(crate) struct ShardCounts {
    read: Mutex<HashMap<String, (u32, Instant)>>,
    next: AtomicU32,
}

impl ShardCounts {
    /// The number of shards of `queue` (1: not sharded).
    async fn count(&self, conn: &mut impl ConnectionLike, keys: &Keys, queue: &str) -> Result<u32> {
        if let Some((count, at)) = self.lock().get(queue)
            && at.elapsed() < SHARD_COUNT_TTL
        {
            return Ok(*count);
        }
        let count = store::shards::count(conn, keys, queue).await?;
        self.lock()
            .insert(queue.to_owned(), (count, Instant::now()));
        Ok(count)
    }

    /// The payloads of `jobs`, each moved to the shard of its queue that its key picks (or the
    /// next in turn) if its queue is sharded.
    pub(crate) async fn place(
        &self,
        conn: &mut impl ConnectionLike,
        keys: &Keys,
        jobs: Vec<Encoded>,
    ) -> Result<Vec<Payload>> {
        let mut counts: Vec<(String, u32)> = Vec::new(); // a batch names few queues
        let mut placed = Vec::with_capacity(jobs.len());
        for Encoded {
            mut payload,
            shard_key,
            ..
        } in jobs
        {
            let count = match counts.iter().find(|(q, _)| *q == payload.queue) {
                Some((_, count)) => *count,
                None => {
                    let count = self.count(conn, keys, &payload.queue).await?;
                    counts.push((payload.queue.clone(), count));
                    count
                }
            };
            if count > 1 {
                let shard = match &shard_key {
                    Some(key) => shard_for_key(key, count),
                    None => self.next.fetch_add(1, Ordering::Relaxed) % count,
                };
                payload.queue = shard_queue(&payload.queue, shard);
            }
            placed.push(payload);
        }
        Ok(placed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u32, Instant)>> {
        self.read.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_names_its_queue() {
        assert_eq!(shard_queue("default", 3), "default#3");
        assert_eq!(logical_queue("default#3"), "default");
        assert_eq!(logical_queue("default"), "default");
        assert_eq!(logical_queue("default#x"), "default#x");
        assert_eq!(logical_queue("default#"), "default#");
    }

    #[test]
    fn one_key_always_picks_one_shard_and_keys_spread() {
        // Fixed values: other languages' producers must place keys the same way.
        assert_eq!(shard_for_key("", 8), (0xcbf2_9ce4_8422_2325_u64 % 8) as u32);
        assert_eq!(
            shard_for_key("a", 1_000_000),
            (0xaf63_dc4c_8601_ec8c_u64 % 1_000_000) as u32
        );
        let mut per_shard = [0u32; 4];
        for user in 0..4000 {
            per_shard[shard_for_key(&format!("user-{user}"), 4) as usize] += 1;
        }
        assert!(
            per_shard.iter().all(|n| (800..1200).contains(n)),
            "{per_shard:?}"
        );
    }

    #[test]
    fn shard_counts_are_bounded() {
        assert!(validate_count(0).is_err());
        assert!(validate_count(1).is_ok());
        assert!(validate_count(MAX_SHARDS).is_ok());
        assert!(validate_count(MAX_SHARDS + 1).is_err());
    }
}
