//! Expiring jobs: a job not *started* by its deadline never runs. It ends `expired`, kept in
//! its queue's dead set with that reason, or dropped (its status record alone says
//! `expired`) if the job says so, wherever it waited: queued, scheduled, parked by flow
//! control, or waiting for a retry.
//!
//! ```no_run
//! # async fn demo(client: gator_core::Client) -> gator_core::Result<()> {
//! # use gator_core::Job;
//! # struct Report;
//! # impl Job for Report {
//! #     type Args = (); type Item = ();
//! #     fn args_of(_: ()) {} fn item_of(_: ()) {}
//! #     const NAME: &'static str = "report"; const QUEUE: &'static str = "default";
//! #     fn execute(_: (), _: gator_core::Context) -> gator_core::job::Execution { unimplemented!() }
//! # }
//! use std::time::Duration;
//! gator_core::PendingJob::<Report>::new(())
//!     .expires_in(Duration::from_secs(600))
//!     .through(&client).dispatch()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! **Redis's clock decides.** The payload carries the deadline as an absolute time in ms on
//! Redis's clock (`expires_at`). `expires_in` is turned into one by the dispatching client,
//! which reads Redis's `TIME` (one round trip, for expiring jobs only), never its own clock. A
//! worker about to start a job that has a deadline runs one script (again only for such a job,
//! `crate::store::expiry`) that reads Redis's `TIME` itself and, past the deadline, settles
//! the job `expired` without running it, or else records it `running` since then
//! ([`crate::Context::started_at`]): the decision and its effect are one atomic step.
//!
//! A job without a deadline pays nothing: no field, no call; its worker reads one more
//! optional field in the lenient parse it does anyway.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

/// What happens to a job that expired before it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnExpire {
    /// Kept in its queue's dead set, its error saying it expired (the default).
    #[default]
    Dead,
    /// Dropped: not kept anywhere; its status record says `expired` for the retention.
    Drop,
}

impl OnExpire {
    /// The wire spelling: `dead` or `drop`.
    pub fn name(self) -> &'static str {
        match self {
            OnExpire::Dead => "dead",
            OnExpire::Drop => "drop",
        }
    }

    /// `dead` or `drop`; anything else is refused with the valid names.
    pub fn parse(text: &str) -> Result<OnExpire> {
        match text {
            "dead" => Ok(OnExpire::Dead),
            "drop" => Ok(OnExpire::Drop),
            other => Err(Error::InvalidTime {
                reason: format!("on_expire must be \"dead\" or \"drop\", not {other:?}"),
            }),
        }
    }
}

/// When a job expires, as its dispatch says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// This long after its dispatch, counted on Redis's clock.
    In(Duration),
    /// At this time, ms since the epoch on Redis's clock.
    At(u64),
}

/// A job's expiry: when, and what happens then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    /// Its deadline.
    pub deadline: Deadline,
    /// What happens to it past the deadline.
    pub on_expire: OnExpire,
}

impl Expiry {
    /// An expiry `delay` after dispatch (what `#[job(expires_in = "10m")]` sets), kept in the
    /// dead set.
    pub const fn after(delay: Duration) -> Expiry {
        Expiry {
            deadline: Deadline::In(delay),
            on_expire: OnExpire::Dead,
        }
    }
}

/// The reason an expired job's dead-set entry and status record give.
pub const REASON: &str = "expired: not started by its deadline";

/// `delay`, if it can be a job's time to live: more than zero, and within the scheduling
/// horizon ([`crate::horizon::SCHEDULE_HORIZON`]).
pub fn check_delay(delay: Duration) -> Result<Duration> {
    if delay.is_zero() {
        return Err(Error::InvalidTime {
            reason: "expires_in must be more than zero: a job that expires at once never runs"
                .to_owned(),
        });
    }
    crate::horizon::check_delay(delay)
}

/// `time` as a deadline in ms since the epoch, if it is a time within the horizon.
pub fn deadline_at(time: SystemTime) -> Result<u64> {
    crate::horizon::check_due_ms(crate::clock::to_ms(time))
}

/// `expiry`, if its deadline is one a job may have: a delay more than zero, and either within
/// the horizon. Dispatch calls it, so a bad deadline is refused before anything is stored.
pub fn checked(expiry: Option<Expiry>) -> Result<Option<Expiry>> {
    let Some(expiry) = expiry else {
        return Ok(None);
    };
    match expiry.deadline {
        Deadline::In(delay) => {
            check_delay(delay)?;
        }
        Deadline::At(ms) => {
            crate::horizon::check_due_ms(ms)?;
        }
    }
    Ok(Some(expiry))
}

/// Parses `expires_in` in Gator's duration notation (`"90s"`, `"10m"`, `"1h30m"`), as the
/// HTTP API and by-name dispatch take it; refuses zero, negative and unparsable values and
/// anything past the horizon, saying why.
pub fn parse_delay(text: &str) -> Result<Duration> {
    let delay = gator_rules::parse_duration(text).map_err(|e| Error::InvalidTime {
        reason: format!("expires_in {text:?} is not a duration ({e}); write e.g. \"10m\""),
    })?;
    check_delay(delay)
}

/// The deadline in ms on Redis's clock: `At` as it is, `In` counted from `redis_now` (ms,
/// Redis's `TIME`).
pub fn resolve(deadline: Deadline, redis_now: u64) -> u64 {
    match deadline {
        Deadline::At(ms) => ms,
        Deadline::In(delay) => redis_now.saturating_add(gator_rules::millis(delay)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_unparsable_negative_and_past_the_horizon_are_refused_with_a_reason() {
        assert!(
            parse_delay("0s")
                .unwrap_err()
                .to_string()
                .contains("more than zero")
        );
        assert!(
            parse_delay("-5m")
                .unwrap_err()
                .to_string()
                .contains("not a duration")
        );
        assert!(
            parse_delay("soon")
                .unwrap_err()
                .to_string()
                .contains("not a duration")
        );
        assert!(
            parse_delay("6000d")
                .unwrap_err()
                .to_string()
                .contains("5 years")
        );
        assert_eq!(parse_delay("10m").ok(), Some(Duration::from_secs(600)));
        assert!(
            OnExpire::parse("keep")
                .unwrap_err()
                .to_string()
                .contains("\"drop\"")
        );
        assert_eq!(resolve(Deadline::In(Duration::from_secs(1)), 1000), 2000);
        assert_eq!(resolve(Deadline::At(5), 1000), 5);
    }
}
