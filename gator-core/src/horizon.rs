//! How far ahead a job may be scheduled, checked in one place for every way of saying when: a
//! time (`dispatch_at`, a chain's or a unique job's, the HTTP API's `at`) and a delay
//! (`dispatch_in`, theirs, the HTTP API's `in`). A job due later than the horizon is almost
//! surely a unit mistake (ms given as s, years given as days), and its score would sit in Redis
//! forever or overflow what a status record can hold.

use crate::error::{Error, Result};
use std::time::{Duration, SystemTime};

/// How far ahead a job may be scheduled: about five years.
pub const SCHEDULE_HORIZON: Duration = Duration::from_secs(5 * 365 * 24 * 3600);

/// `delay`, if it is within [`SCHEDULE_HORIZON`].
pub(crate) fn check_delay(delay: Duration) -> Result<Duration> {
    if delay > SCHEDULE_HORIZON {
        return Err(Error::InvalidTime {
            reason: format!(
                "a delay of {} is more than 5 years; was a time given as a delay, or ms as s?",
                humantime::format_duration(delay)
            ),
        });
    }
    Ok(delay)
}

/// Now plus `delay` on this host's clock (an estimate of the due time; Redis's clock decides),
/// refusing a delay past [`SCHEDULE_HORIZON`].
pub(crate) fn time_after(delay: Duration) -> Result<SystemTime> {
    let delay = check_delay(delay)?;
    SystemTime::now()
        .checked_add(delay)
        .ok_or_else(|| Error::InvalidTime {
            reason: format!("a delay of {delay:?} is past the end of time"),
        })
}

/// `ms` since the epoch, if it is no more than [`SCHEDULE_HORIZON`] ahead of now.
pub(crate) fn check_due_ms(ms: u64) -> Result<u64> {
    let horizon = crate::clock::now_ms().saturating_add(SCHEDULE_HORIZON.as_millis() as u64);
    if ms > horizon {
        return Err(Error::InvalidTime {
            reason: format!(
                "{ms} ms since the epoch is more than 5 years ahead; was a time in ms given as seconds?"
            ),
        });
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_or_a_time_past_five_years_is_refused_and_one_within_is_kept() {
        let year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(check_delay(year).ok(), Some(year));
        assert!(check_delay(10 * year).is_err());
        assert!(time_after(Duration::MAX).is_err());
        assert!(time_after(1_000_000_000 * year).is_err());
        let now = crate::payload::now_ms();
        assert_eq!(check_due_ms(now + 1000).ok(), Some(now + 1000));
        assert!(check_due_ms(now + 6 * year.as_millis() as u64).is_err());
        assert!(check_due_ms(u64::MAX).is_err());
    }
}
