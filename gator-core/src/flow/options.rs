//! A job's own flow options, carried in its payload's `flow` object.

use serde::{Deserialize, Serialize};

// The priority range and the cost's are the rules `#[job]` checks too (gator-rules).
pub use gator_rules::{DEFAULT_PRIORITY, MAX_PRIORITY};

/// A job's flow options, as stored in its payload's `flow` object. A job with none set has no
/// `flow` object, and a queue only ever given such jobs stays plain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowOptions {
    /// Lower runs first; [`DEFAULT_PRIORITY`] if unset. At most [`MAX_PRIORITY`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u16>,
    /// The units of the queue's concurrency limit the job takes while it runs (1 if unset),
    /// and the places it takes in its rate limiters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u32>,
    /// The limit key whose share the job counts against (for example a region).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Runs outside the concurrency limit, before every other job of the queue.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub critical: bool,
    /// The named rate limiter the job also obeys (its value is set in Redis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
    /// The time windows the job may start in, as `HH:MM-HH:MM` (see [`super::Windows`]);
    /// empty: any time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<String>,
    /// The IANA time zone of `windows` (UTC if unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    /// The fair key (a tenant, a customer): the queue takes its keys' jobs in weighted
    /// round-robin, so a key's first job starts after at most one job of each key of its
    /// weight already waiting, however many those hold. See [`super::FlowSetting::FairWeight`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fair: Option<String>,
    /// The no-overlap key (`#[job(no_overlap)]`): at most one job of the queue with this key
    /// runs at once; the others wait parked. See [`super::overlap`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<String>,
}

impl FlowOptions {
    /// Whether no option is set: the job needs no flow control.
    pub fn is_empty(&self) -> bool {
        *self == FlowOptions::default()
    }

    /// Checks the options a dispatch would store.
    pub fn validate(&self) -> crate::error::Result<()> {
        let refuse = |reason: String| Err(crate::error::Error::InvalidFlow { reason });
        if let Some(priority) = self
            .priority
            .filter(|p| gator_rules::priority(u64::from(*p)).is_none())
        {
            return refuse(format!(
                "priority {priority} is above the highest, {MAX_PRIORITY}"
            ));
        }
        if self
            .cost
            .is_some_and(|c| gator_rules::cost(u64::from(c)).is_err())
        {
            return refuse("a cost of 0 would run outside the limit: use `critical`".into());
        }
        if let Some(key) = &self.key {
            check_name("limit key", key)?;
        }
        if let Some(rate) = &self.rate {
            check_name("rate limiter", rate)?;
        }
        if let Some(fair) = &self.fair {
            check_name("fair key", fair)?;
        }
        if let Some(overlap) = &self.overlap {
            check_name("overlap key", overlap)?;
            if self.critical {
                // A critical job skips the parking keys the lock's waiters park under.
                return refuse(
                    "a critical job cannot be no_overlap: it runs outside the queue's parking, \
                     where the lock's waiters wait; drop one of the two"
                        .into(),
                );
            }
        }
        self.parsed_windows()?;
        Ok(())
    }

    /// The job's time windows, if it has any.
    pub fn parsed_windows(&self) -> crate::error::Result<Option<super::Windows>> {
        if self.windows.is_empty() {
            if let Some(tz) = &self.tz {
                return Err(crate::error::Error::InvalidFlow {
                    reason: format!("time zone {tz:?} given without time windows"),
                });
            }
            return Ok(None);
        }
        super::Windows::parse(&self.windows, self.tz.as_deref()).map(Some)
    }
}

/// Checks a rate limiter's name (as [`FlowOptions::validate`] does).
pub fn check_limiter_name(name: &str) -> crate::error::Result<()> {
    check_name("rate limiter", name)
}

/// A limit key, limiter name, fair key or overlap key: the rule `#[job(rate = ..)]` checks too
/// ([`gator_rules::flow_name`]: 1 to 128 bytes that show as themselves), worded for the
/// run-time API. The name is quoted escaped: it may hold what the rule refuses.
pub(crate) fn check_name(what: &str, name: &str) -> crate::error::Result<()> {
    gator_rules::flow_name(name).map_err(|problem| crate::error::Error::InvalidFlow {
        reason: format!(
            "{what} \"{}\": it {problem} (a {what} is 1 to {} bytes that show as themselves)",
            gator_rules::escape(&gator_rules::cut(name, 100)),
            gator_rules::MAX_FLOW_NAME
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_left_unset_are_not_written() {
        assert_eq!(
            serde_json::to_string(&FlowOptions::default()).unwrap(),
            "{}"
        );
        let options = FlowOptions {
            priority: Some(5),
            key: Some("east".into()),
            ..FlowOptions::default()
        };
        assert_eq!(
            serde_json::to_string(&options).unwrap(),
            r#"{"priority":5,"key":"east"}"#
        );
    }

    #[test]
    fn bad_options_are_refused_with_the_reason() {
        let high = FlowOptions {
            priority: Some(10_000),
            ..FlowOptions::default()
        };
        assert!(high.validate().unwrap_err().to_string().contains("9999"));
        let free = FlowOptions {
            cost: Some(0),
            ..FlowOptions::default()
        };
        assert!(
            free.validate()
                .unwrap_err()
                .to_string()
                .contains("critical")
        );
        let key = FlowOptions {
            key: Some("a\u{1f}b".into()),
            ..FlowOptions::default()
        };
        assert!(key.validate().is_err());
        let critical = FlowOptions {
            critical: true,
            overlap: Some("report".into()),
            ..FlowOptions::default()
        };
        assert!(
            critical
                .validate()
                .unwrap_err()
                .to_string()
                .contains("no_overlap")
        );
        let empty = FlowOptions {
            overlap: Some(String::new()),
            ..FlowOptions::default()
        };
        assert!(
            empty
                .validate()
                .unwrap_err()
                .to_string()
                .contains("overlap key")
        );
    }
}
