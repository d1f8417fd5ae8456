//! When a failed job runs again, and when it gives up.

use std::time::Duration;

/// Retries a failed job gets (after its first attempt) before it goes to the dead set, as in
/// Sidekiq; `#[job(retries = N)]` changes it per job.
pub const DEFAULT_RETRIES: u32 = 25;

/// The delay before attempt `failures + 1`, after `failures` failed attempts: Sidekiq's curve,
/// `failures⁴ + 15 + rand(0..10) × (failures + 1)` seconds, about three weeks over 25 retries.
/// The random part spreads a burst of failures so their retries do not arrive together.
pub fn backoff(failures: u32) -> Duration {
    let n = u64::from(failures.saturating_sub(1));
    let jitter = rand::random_range(0..10u64) * (n + 1);
    Duration::from_secs(n.pow(4) + 15 + jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_retry_comes_after_15_to_24_seconds() {
        for _ in 0..100 {
            let d = backoff(1).as_secs();
            assert!((15..=24).contains(&d), "{d}");
        }
    }

    #[test]
    fn backoff_grows_to_about_three_weeks_in_total() {
        let total: u64 = (1..=DEFAULT_RETRIES).map(|n| backoff(n).as_secs()).sum();
        let days = total as f64 / 86_400.0;
        assert!((19.0..22.0).contains(&days), "{days} days");
    }
}
