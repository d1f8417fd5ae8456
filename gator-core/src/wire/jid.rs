//! Job ids, and the queued mark a jid names.
//!
//! A jid is a UUIDv7 (`tttttttt-tttt-7aaa-vbbb-bbbbbbbbbbss`): it sorts by creation time and
//! any language can mint one. Gator mints its own so that 16 of them share everything but
//! their time and last byte: the characters `aaa-vbbb-bbbbbbbbbb` name a **bucket**, the last
//! two (`ss`, `00` to `0f`) the job's place in it. A plain dispatch records a job as queued
//! with a field in its bucket's hash (`gator:{<queue>}:queued:<bucket>`, field `ss`) instead
//! of a key of its own: a few bytes a job instead of a key's hundred and more, and one `HSET`
//! for up to 16 jobs. See "Job status" in `docs/wire-format.md`.
//!
//! Any UUIDv7 names a bucket this way, so readers and writers need not know who minted it: a
//! jid minted elsewhere simply never has a mark (its producer writes a `queued` record).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Jids that share a bucket. Redis keeps a hash this small as a listpack, whose inserts and
/// lookups scan it: with 128 fields (the most it keeps that way by default) an `HSET` of a
/// bucket cost Redis 1.3 µs a field, four times the `RPUSH` of the job; with 16, a tenth of
/// that, for about 8 more bytes a job (the bucket's key shared by fewer jobs).
pub const BUCKET_SIZE: u64 = 16;

/// A new job id (see the module docs): a UUIDv7 whose random bits are this process's bucket
/// and the jid's place in it.
pub fn new_jid() -> String {
    let minter = MINTER.get_or_init(Minter::new);
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    minter.mint(ms)
}

/// The bucket and the field of `jid`'s queued mark, if `jid` is a UUIDv7 as text.
pub fn mark_of(jid: &str) -> Option<(&str, &str)> {
    let bytes = jid.as_bytes();
    let shaped = bytes.len() == 36
        && [8, 13, 18, 23].iter().all(|&i| bytes[i] == b'-')
        && bytes[14] == b'7'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| matches!(i, 8 | 13 | 18 | 23) || b.is_ascii_hexdigit());
    shaped.then(|| (&jid[15..34], &jid[34..]))
}

/// This process's bucket numbers: random at start, then counted.
struct Minter {
    head: [u8; 2],
    base: u64,
    next: AtomicU64,
}

static MINTER: OnceLock<Minter> = OnceLock::new();

impl Minter {
    fn new() -> Minter {
        Minter {
            head: rand::random(),
            base: rand::random(),
            next: AtomicU64::new(0),
        }
    }

    /// The next jid, at `ms` since the epoch.
    fn mint(&self, ms: u64) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let bucket = self.base.wrapping_add(n / BUCKET_SIZE);
        let mut random = [0u8; 10];
        random[..2].copy_from_slice(&self.head);
        random[2..9].copy_from_slice(&bucket.to_be_bytes()[1..]);
        random[9] = (n % BUCKET_SIZE) as u8;
        uuid::Builder::from_unix_timestamp_millis(ms, &random)
            .into_uuid()
            .hyphenated()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_jids_are_uuid_v7_and_share_a_bucket_by_16() {
        let minter = Minter::new();
        let jids: Vec<String> = (0..300)
            .map(|i| minter.mint(1_700_000_000_000 + i))
            .collect();
        for jid in &jids {
            let uuid = uuid::Uuid::parse_str(jid).expect("a UUID");
            assert_eq!(uuid.get_version_num(), 7, "{jid}");
        }
        let marks: Vec<(&str, &str)> = jids.iter().map(|j| mark_of(j).unwrap()).collect();
        let mut buckets: Vec<&str> = marks.iter().map(|m| m.0).collect();
        buckets.dedup();
        assert_eq!(buckets.len(), 19, "18 × 16 + 12: {buckets:?}");
        for bucket in &buckets {
            let fields: std::collections::HashSet<&str> = marks
                .iter()
                .filter(|m| m.0 == *bucket)
                .map(|m| m.1)
                .collect();
            assert!(fields.len() <= 16);
            assert!(
                fields
                    .iter()
                    .all(|f| u8::from_str_radix(f, 16).unwrap() < 16)
            );
        }
        let unique: std::collections::HashSet<&String> = jids.iter().collect();
        assert_eq!(unique.len(), jids.len());
        let mut sorted = jids.clone();
        sorted.sort();
        assert_eq!(sorted, jids, "jids sort by creation");
        assert!(mark_of(&new_jid()).is_some());
    }

    #[test]
    fn only_a_uuid_v7_names_a_mark() {
        let jid = "0193a4f2-7c1e-7abc-9def-0123456789ab";
        assert_eq!(mark_of(jid), Some(("abc-9def-0123456789", "ab")));
        for other in [
            "j1",
            "0193a4f2-7c1e-4abc-9def-0123456789ab",
            "0193a4f2-7c1e-7abc-9def-0123456789abc",
            "0193a4f2x7c1e-7abc-9def-0123456789ab",
            "0193a4f2-7c1e-7abc-9def-0123456789zz",
        ] {
            assert_eq!(mark_of(other), None, "{other}");
        }
    }
}
