//! Redis's clock as seen from this process: an offset learned from every heartbeat.
//!
//! Nothing here decides anything. Due times, leases and dead-set ages are decided inside the
//! scripts, on Redis's `TIME`. This clock only stamps what a person reads (a payload's
//! `failed_at`, `enqueued_at` of a retry), so that the stamps of a worker whose own clock is
//! off still agree with the scores Redis keeps.

use std::sync::atomic::{AtomicI64, Ordering};

/// The offset between Redis's clock and this host's, as last measured.
#[derive(Debug, Default)]
pub struct RedisClock {
    offset_ms: AtomicI64,
}

impl RedisClock {
    /// Records Redis's clock as a reply just reported it (`redis_now_ms`, ms since the epoch).
    pub fn observe(&self, redis_now_ms: u64) {
        let offset = redis_now_ms as i64 - gator_core::payload::now_ms() as i64;
        self.offset_ms.store(offset, Ordering::Relaxed);
    }

    /// An estimate of Redis's clock now, ms since the epoch (this host's clock until the first
    /// heartbeat).
    pub fn now_ms(&self) -> u64 {
        let local = gator_core::payload::now_ms() as i64;
        local
            .saturating_add(self.offset_ms.load(Ordering::Relaxed))
            .max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_follows_the_observed_offset() {
        let clock = RedisClock::default();
        let local = gator_core::payload::now_ms();
        clock.observe(local + 90_000);
        let estimate = clock.now_ms();
        assert!(
            (local + 90_000..local + 91_000).contains(&estimate),
            "{estimate} vs {local}"
        );
    }
}
