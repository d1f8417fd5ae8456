//! When a failed job runs again, and when it gives up: the default policy, and the helper the
//! `backoff = [...]` option of `#[job]` uses.

use std::time::{Duration, SystemTime};

/// A failed attempt, as a retry strategy (`#[job(retry = my_strategy)]`) sees it.
#[derive(Debug)]
pub struct RetryContext<'a> {
    /// Why it failed; `JobError::downcast_ref` reaches a typed error.
    pub error: &'a crate::failure::JobError,
    /// The failures so far, this one included (1 after the first attempt failed).
    pub failures: u32,
    /// The job's jid.
    pub jid: &'a str,
    /// Its wire name.
    pub job: &'a str,
}

/// What a retry strategy decides after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Run it again after this long.
    RetryIn(Duration),
    /// Run it again at this time.
    RetryAt(SystemTime),
    /// Give up: the dead set, where it can be retried by hand.
    Dead,
    /// Give up and forget it: recorded `discarded` (with the error), not kept in the dead set.
    Discard,
}

/// Retries a failed job gets (after its first attempt) before it goes to the dead set, as in
/// Sidekiq; `#[job(retries = N)]` changes it per job.
pub const DEFAULT_RETRIES: u32 = 25;

/// The delay before attempt `failures + 1`, after `failures` failed attempts: Sidekiq's curve,
/// `failures⁴ + 15 + rand(0..10) × (failures + 1)` seconds, about three weeks over 25 retries.
/// The random part spreads a burst of failures so their retries do not arrive together.
pub fn default_backoff(failures: u32) -> Duration {
    let n = u64::from(failures.saturating_sub(1));
    let jitter = rand::random_range(0..10u64) * (n + 1);
    Duration::from_secs(n.pow(4) + 15 + jitter)
}

/// The delay before the retry after `failures` failures from a fixed list of delays in ms:
/// the first failure waits `delays_ms[0]`, and the last delay repeats once the list runs out.
pub fn from_list(delays_ms: &[u64], failures: u32) -> Duration {
    let index = (failures.max(1) - 1) as usize;
    let ms = delays_ms
        .get(index)
        .or(delays_ms.last())
        .copied()
        .unwrap_or(0);
    Duration::from_millis(ms)
}

/// A job's retry strategy, as its registration holds it (`#[job(retry = ..)]`).
pub type Strategy = fn(&RetryContext<'_>) -> Option<RetryDecision>;

/// What follows a failed attempt, decided the one way the worker and the testing mode share:
/// the job's retry `strategy` first (`None` skips it: what no worker could run), then, for a
/// retryable error with `failure.failures <= retries`, a retry after `backoff(failures)`; else
/// the dead set. A strategy's time (`RetryAt`) becomes the wait from `now`. Also says whether
/// the strategy decided.
pub fn decide(
    strategy: Option<Strategy>,
    retries: u32,
    backoff: fn(u32) -> Duration,
    failure: &RetryContext<'_>,
    now: SystemTime,
) -> (RetryDecision, bool) {
    let decided = strategy.and_then(|strategy| strategy(failure));
    let decision = match decided {
        Some(RetryDecision::RetryAt(at)) => {
            RetryDecision::RetryIn(at.duration_since(now).unwrap_or(Duration::ZERO))
        }
        Some(decision) => decision,
        None if failure.error.is_retryable() && failure.failures <= retries => {
            RetryDecision::RetryIn(backoff(failure.failures))
        }
        None => RetryDecision::Dead,
    };
    (decision, decided.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_retry_comes_after_15_to_24_seconds() {
        for _ in 0..100 {
            let d = default_backoff(1).as_secs();
            assert!((15..=24).contains(&d), "{d}");
        }
    }

    #[test]
    fn a_list_of_delays_is_used_in_order_and_its_last_delay_repeats() {
        let delays = [100, 1000, 5000];
        let got: Vec<u64> = (1..=5)
            .map(|f| from_list(&delays, f).as_millis() as u64)
            .collect();
        assert_eq!(got, vec![100, 1000, 5000, 5000, 5000]);
    }

    #[test]
    fn backoff_grows_to_about_three_weeks_in_total() {
        let total: u64 = (1..=DEFAULT_RETRIES)
            .map(|n| default_backoff(n).as_secs())
            .sum();
        let days = total as f64 / 86_400.0;
        assert!((19.0..22.0).contains(&days), "{days} days");
    }

    fn ten_seconds(_: u32) -> Duration {
        Duration::from_secs(10)
    }

    fn at_noon(_: &RetryContext<'_>) -> Option<RetryDecision> {
        Some(RetryDecision::RetryAt(
            SystemTime::UNIX_EPOCH + Duration::from_secs(12 * 3600),
        ))
    }

    #[test]
    fn a_failure_retries_on_its_backoff_until_its_retries_are_spent_and_a_strategy_goes_first() {
        let error = crate::failure::JobError::new("smtp down");
        let failure = |failures| RetryContext {
            error: &error,
            failures,
            jid: "j",
            job: "mail",
        };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(11 * 3600);
        let after = |failures, strategy: Option<Strategy>| {
            decide(strategy, 2, ten_seconds, &failure(failures), now)
        };
        let ten = RetryDecision::RetryIn(Duration::from_secs(10));
        assert_eq!(after(2, None), (ten, false));
        assert_eq!(after(3, None), (RetryDecision::Dead, false));
        let hour = RetryDecision::RetryIn(Duration::from_secs(3600));
        assert_eq!(
            after(9, Some(at_noon)),
            (hour, true),
            "a time becomes the wait from now"
        );
        let discarded = crate::failure::JobError::discard("bad input");
        let failure = RetryContext {
            error: &discarded,
            failures: 1,
            jid: "j",
            job: "mail",
        };
        assert_eq!(
            decide(None, 2, ten_seconds, &failure, now),
            (RetryDecision::Dead, false)
        );
    }
}
