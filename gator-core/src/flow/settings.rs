//! A queue's flow settings as stored in its `flow` hash, and how each is written.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A rate limit: at most `count` jobs (times their cost) per `per`, with at most `burst`
/// starting at once after a quiet spell. Written `100/1s` (burst 1: evenly spread) or
/// `100/1s burst 10`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSpec {
    /// Jobs per interval.
    pub count: u32,
    /// The interval.
    pub per: Duration,
    /// How many may start at once after a quiet spell (at least 1).
    pub burst: u32,
}

impl RateSpec {
    /// The value stored in the flow hash: `count interval_ms burst`.
    pub(crate) fn stored(&self) -> String {
        format!("{} {} {}", self.count, self.per.as_millis(), self.burst)
    }

    /// Reads a value stored by [`RateSpec::stored`].
    pub(crate) fn from_stored(raw: &str) -> Option<RateSpec> {
        let mut parts = raw.split(' ').map(str::parse::<u64>);
        let (Some(Ok(count)), Some(Ok(ms)), Some(Ok(burst))) =
            (parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        Some(RateSpec {
            count: u32::try_from(count).ok()?,
            per: Duration::from_millis(ms),
            burst: u32::try_from(burst).ok()?,
        })
    }
}

impl FromStr for RateSpec {
    type Err = Error;

    fn from_str(text: &str) -> Result<RateSpec> {
        let refuse = || Error::InvalidFlow {
            reason: format!(
                "rate {text:?} is not COUNT/INTERVAL, as in `100/1s` or `100/1s burst 10`"
            ),
        };
        let (rate, burst) = match text.split_once("burst") {
            Some((rate, burst)) => (rate, burst.trim().parse::<u32>().map_err(|_| refuse())?),
            None => (text, 1),
        };
        let (count, per) = rate.trim().split_once('/').ok_or_else(refuse)?;
        let count: u32 = count.trim().parse().map_err(|_| refuse())?;
        let per = gator_rules::parse_duration(per.trim()).map_err(|_| refuse())?;
        if count == 0 || per < Duration::from_millis(1) || burst == 0 {
            return Err(Error::InvalidFlow {
                reason: format!(
                    "rate {text:?} must allow at least one job per interval of 1 ms or more, \
                     with a burst of at least 1"
                ),
            });
        }
        Ok(RateSpec { count, per, burst })
    }
}

impl fmt::Display for RateSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.count, humantime::format_duration(self.per))?;
        if self.burst > 1 {
            write!(f, " burst {}", self.burst)?;
        }
        Ok(())
    }
}

/// The highest weight a fair key may have ([`FlowSetting::FairWeight`]).
pub const MAX_FAIR_WEIGHT: u8 = 100;

/// How a controlled queue orders the jobs that may start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QueueOrdering {
    /// By priority, then by the time each job became due (the default).
    #[default]
    Priority,
    /// By the time each job became due; priority only breaks ties.
    Due,
}

impl FromStr for QueueOrdering {
    type Err = Error;

    fn from_str(text: &str) -> Result<QueueOrdering> {
        match text {
            "priority" => Ok(QueueOrdering::Priority),
            "due" => Ok(QueueOrdering::Due),
            other => Err(Error::InvalidFlow {
                reason: format!("order {other:?} is neither `priority` nor `due`"),
            }),
        }
    }
}

impl fmt::Display for QueueOrdering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QueueOrdering::Priority => "priority",
            QueueOrdering::Due => "due",
        })
    }
}

/// One change to a queue's flow settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowSetting {
    /// Pause (`true`) or resume the queue.
    Paused(bool),
    /// The concurrency limit in units over the whole fleet, or none.
    Limit(Option<u32>),
    /// The share (percent of the limit) of one limit key, or of every unlisted key (`None`);
    /// a share of `None` removes it.
    Share {
        /// The limit key, or `None` for the default share.
        key: Option<String>,
        /// Percent of the limit, 1 to 100.
        percent: Option<u8>,
    },
    /// A rate limiter's value: the queue's own (`name: None`) or a named one; `None` removes it.
    Rate {
        /// The limiter's name, or `None` for the queue's own.
        name: Option<String>,
        /// Its rate.
        rate: Option<RateSpec>,
    },
    /// The weight of one fair key, or of every unlisted one (`None`), from 1 to
    /// [`MAX_FAIR_WEIGHT`]: a key of weight 3 starts 3 jobs for each of a key of weight 1
    /// while both wait (see [`super::FlowOptions::fair`]). A weight of `None` removes it
    /// (back to the default, 1).
    FairWeight {
        /// The fair key, or `None` for the default weight.
        key: Option<String>,
        /// Its weight.
        weight: Option<u8>,
    },
    /// Aging: a waiting job gains one priority step per this interval; `None` turns it off.
    Aging(Option<Duration>),
    /// How the queue orders jobs that may start.
    Order(QueueOrdering),
    /// The time windows the queue starts jobs in; `None` removes them (any time).
    Windows(Option<super::Windows>),
}

impl FlowSetting {
    /// The flow hash field and its value (empty to delete it), after checking the setting.
    pub(crate) fn field(&self) -> Result<(String, String)> {
        let refuse = |reason: &str| {
            Err(Error::InvalidFlow {
                reason: reason.to_owned(),
            })
        };
        Ok(match self {
            FlowSetting::Paused(true) => ("paused".into(), "1".into()),
            FlowSetting::Paused(false) => ("paused".into(), String::new()),
            FlowSetting::Limit(Some(0)) => {
                return refuse("a limit of 0 would start nothing: pause the queue instead");
            }
            FlowSetting::Limit(limit) => ("limit".into(), opt(limit)),
            FlowSetting::Share {
                percent: Some(p), ..
            } if !(1..=100).contains(p) => {
                return refuse("a share is a percentage from 1 to 100");
            }
            FlowSetting::Share { key, percent } => {
                (keyed("limit key", "share", key.as_deref())?, opt(percent))
            }
            FlowSetting::FairWeight {
                weight: Some(w), ..
            } if !(1..=MAX_FAIR_WEIGHT).contains(w) => {
                return refuse("a fair key's weight is from 1 to 100");
            }
            FlowSetting::FairWeight { key, weight } => (
                keyed("fair key", "fair_weight", key.as_deref())?,
                opt(weight),
            ),
            FlowSetting::Rate { name, rate } => (
                // The queue's own limiter is `rate`, not `rate_default`: it binds every job.
                match name {
                    Some(_) => keyed("rate limiter", "rate", name.as_deref())?,
                    None => "rate".into(),
                },
                rate.map(|r| r.stored()).unwrap_or_default(),
            ),
            FlowSetting::Aging(Some(d)) if d.as_millis() == 0 || d.as_millis() > 86_400_000 => {
                return refuse("aging must be from 1 ms to 24 h");
            }
            FlowSetting::Aging(aging) => (
                "aging".into(),
                aging.map(|d| d.as_millis().to_string()).unwrap_or_default(),
            ),
            FlowSetting::Order(QueueOrdering::Priority) => ("order".into(), String::new()),
            FlowSetting::Order(QueueOrdering::Due) => ("order".into(), "due".into()),
            FlowSetting::Windows(windows) => (
                "windows".into(),
                windows
                    .as_ref()
                    .map(super::Windows::stored)
                    .unwrap_or_default(),
            ),
        })
    }
}

/// The field of a setting per key: `<field>:<key>` for `key` (checked as a `what`'s name), or
/// `<field>_default` for every unlisted key.
fn keyed(what: &str, field: &str, key: Option<&str>) -> Result<String> {
    match key {
        Some(key) => {
            super::options::check_name(what, key)?;
            Ok(format!("{field}:{key}"))
        }
        None => Ok(format!("{field}_default")),
    }
}

fn opt<T: ToString>(value: &Option<T>) -> String {
    value.as_ref().map(T::to_string).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_as_written() {
        let rate: RateSpec = "100/1s".parse().unwrap();
        assert_eq!(
            (rate.count, rate.per, rate.burst),
            (100, Duration::from_secs(1), 1)
        );
        assert_eq!(rate.to_string(), "100/1s");
        let rate: RateSpec = "5/2m burst 3".parse().unwrap();
        assert_eq!(rate.stored(), "5 120000 3");
        assert_eq!(RateSpec::from_stored("5 120000 3"), Some(rate));
        assert_eq!(rate.to_string(), "5/2m burst 3");
        for bad in [
            "",
            "100",
            "0/1s",
            "100/0s",
            "x/1s",
            "1/1s burst 0",
            "1/1s burst x",
        ] {
            assert!(
                bad.parse::<RateSpec>().is_err(),
                "{bad:?} should be refused"
            );
        }
    }

    #[test]
    fn settings_map_to_fields_and_bad_ones_are_refused() {
        let share = FlowSetting::Share {
            key: Some("east".into()),
            percent: Some(40),
        };
        assert_eq!(share.field().unwrap(), ("share:east".into(), "40".into()));
        assert_eq!(
            FlowSetting::Limit(None).field().unwrap(),
            ("limit".into(), String::new())
        );
        assert!(FlowSetting::Limit(Some(0)).field().is_err());
        let too_big = FlowSetting::Share {
            key: None,
            percent: Some(101),
        };
        assert!(too_big.field().is_err());
        assert!(FlowSetting::Aging(Some(Duration::ZERO)).field().is_err());
    }
}
