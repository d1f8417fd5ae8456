//! Whether Redis may evict the jobs it accepted.
//!
//! Under any `maxmemory-policy` but `noeviction`, a Redis at its memory limit deletes keys to
//! make room: a queue, an in-flight list, a retry set, with every job in it, and nothing tells
//! anyone. Gator's scripts that only move or remove jobs carry `allow-oom`, so with
//! `noeviction` a full Redis refuses new jobs (the dispatch fails, loudly) while workers keep
//! draining it. The worker checks the policy at start, after each reconnect, and whenever it
//! changes, and logs an error while it is anything else.

use gator_core::Client;
use tracing::error;

/// What `INFO memory` says about eviction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eviction {
    /// `maxmemory-policy`, e.g. `noeviction` or `allkeys-lru`.
    pub policy: String,
    /// `maxmemory` in bytes (0: no limit).
    pub maxmemory: u64,
}

impl Eviction {
    /// Whether Redis may delete keys to make room.
    pub fn may_lose_jobs(&self) -> bool {
        self.policy != "noeviction"
    }
}

/// Reads the eviction settings from `INFO memory` (which managed services allow where they
/// refuse `CONFIG GET`).
/// On a cluster, the node that may lose jobs, if any does.
pub async fn read(client: &Client) -> gator_core::Result<Option<Eviction>> {
    let texts = crate::door::upkeep(client).info(&["memory"]).await?;
    let mut nodes = texts.iter().filter_map(|text| parse(text));
    let first = nodes.next();
    Ok(match first {
        Some(eviction) if !eviction.may_lose_jobs() => {
            nodes.find(Eviction::may_lose_jobs).or(Some(eviction))
        }
        other => other,
    })
}

/// Logs an error if `eviction` lets Redis drop jobs.
pub fn report(eviction: &Eviction) {
    if eviction.may_lose_jobs() {
        error!(
            maxmemory_policy = %eviction.policy,
            maxmemory = eviction.maxmemory,
            "redis may evict keys under memory pressure, and with them jobs it accepted: set maxmemory-policy to noeviction (docs/guarantees.md, \"What Redis must be\")"
        );
    }
}

fn parse(info: &str) -> Option<Eviction> {
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    Some(Eviction {
        policy: field("maxmemory_policy")?.to_owned(),
        maxmemory: field("maxmemory")?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_and_limit_are_read_from_info_memory() {
        let info = "# Memory\r\nused_memory:1000\r\nmaxmemory:1048576\r\nmaxmemory_human:1.00M\r\nmaxmemory_policy:allkeys-lru\r\n";
        let eviction = parse(info).expect("both fields");
        assert_eq!(eviction.policy, "allkeys-lru");
        assert_eq!(eviction.maxmemory, 1_048_576);
        assert!(eviction.may_lose_jobs());
        let safe = parse("maxmemory:0\r\nmaxmemory_policy:noeviction\r\n").expect("both fields");
        assert!(!safe.may_lose_jobs());
        assert_eq!(parse("nothing here"), None);
    }
}
