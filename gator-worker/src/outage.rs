//! A Redis outage, logged as one event: once when it starts, a summary every
//! [`SUMMARY_EVERY`] while it lasts, and once when it ends. Every processor retries its fetch
//! from every queue during an outage; logging each failure made about 24 WARN lines a second
//! for 8 processors on 3 queues, burying whatever else the log said.
//!
//! Only connection failures count ([`gator_core::Error::is_connection`]); any other error (a
//! key of the wrong type) is about one queue, and its caller logs it as before, except a broken
//! global key ([`gator_core::Error::BrokenKey`]), which gator-core's store logged
//! where it found it, at most once per key per 10 minutes. The healthy path reads one atomic
//! flag.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// How often a lasting outage is summed up.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// This process's view of whether Redis is reachable.
#[derive(Debug, Default)]
pub struct Outage {
    /// Whether an outage is under way: the one thing the healthy path reads.
    down: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// When it started, if one is under way.
    since: Option<Instant>,
    /// When it was last summed up.
    summed: Option<Instant>,
    /// Failed calls since the last line.
    failures: u64,
}

impl Outage {
    /// Notes a failed call to Redis; true if it was an outage's (a connection failure), which
    /// this logs, so the caller says nothing of it.
    pub fn failed(&self, error: &gator_core::Error) -> bool {
        if !error.is_connection() {
            return false;
        }
        let now = Instant::now();
        let mut state = self.lock();
        state.failures += 1;
        let Some(since) = state.since else {
            state.since = Some(now);
            state.summed = Some(now);
            state.failures = 0;
            self.down.store(true, Ordering::Release);
            warn!(error = %error, "Redis is unreachable: fetches and writes are retried with backoff; one summary every 10 s until it is back");
            return true;
        };
        if state.summed.is_none_or(|at| now - at >= SUMMARY_EVERY) {
            let failures = std::mem::take(&mut state.failures);
            state.summed = Some(now);
            let down_s = (now - since).as_secs();
            warn!(error = %error, down_s, failures, "Redis is still unreachable");
        }
        true
    }

    /// Runs `log` (the caller's warning about `error`) unless `error` is an outage's, which
    /// is counted in the outage's lines instead.
    pub fn unless_outage(&self, error: &gator_core::Error, log: impl FnOnce()) {
        if !self.failed(error) && !is_logged_already(error) {
            log();
        }
    }

    /// Notes a call that reached Redis: ends an outage, if one was under way.
    pub fn reached(&self) {
        if !self.down.load(Ordering::Acquire) {
            return;
        }
        let mut state = self.lock();
        self.down.store(false, Ordering::Release);
        if let Some(since) = state.since.take() {
            let failures = std::mem::take(&mut state.failures);
            let down_ms = since.elapsed().as_millis() as u64;
            info!(down_ms, failures, "Redis is reachable again");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `error` is a broken global key, which gator-core logged where it found it (at most
/// once per key every ten minutes): its caller says nothing of it.
pub fn is_logged_already(error: &gator_core::Error) -> bool {
    matches!(error, gator_core::Error::BrokenKey { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unreachable() -> gator_core::Error {
        gator_core::Error::Redis(redis::RedisError::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "refused",
        )))
    }

    #[test]
    fn only_connection_failures_make_an_outage_and_a_reach_ends_it() {
        let outage = Outage::default();
        let other = gator_core::Error::Redis(redis::RedisError::from((
            redis::ErrorKind::Client,
            "not an outage",
        )));
        assert!(!outage.failed(&other), "the caller logs other errors");
        assert!(!outage.down.load(Ordering::Acquire));
        assert!(outage.failed(&unreachable()));
        assert!(outage.failed(&unreachable()), "counted, not logged again");
        assert!(outage.down.load(Ordering::Acquire));
        outage.reached();
        assert!(!outage.down.load(Ordering::Acquire));
        assert!(outage.lock().since.is_none());
    }
}
