//! Which of a queue's sorted sets of jobs: scheduled, retry or dead.

use super::keys::Keys;
use std::fmt;
use std::str::FromStr;

/// One of a queue's sorted sets of jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetKind {
    /// Jobs to run later (`dispatch_at`, `dispatch_in`).
    Scheduled,
    /// Failed jobs waiting for their next attempt.
    Retry,
    /// Jobs that will not run again.
    Dead,
}

impl SetKind {
    /// All three, in lifecycle order.
    pub const ALL: [SetKind; 3] = [SetKind::Scheduled, SetKind::Retry, SetKind::Dead];

    /// The set's key for `queue`.
    pub fn key(self, keys: &Keys, queue: &str) -> String {
        match self {
            SetKind::Scheduled => keys.scheduled(queue),
            SetKind::Retry => keys.retry(queue),
            SetKind::Dead => keys.dead(queue),
        }
    }

    /// The state of a job in this set, as its status record says it.
    pub fn state(self) -> crate::wire::lifecycle::State {
        use crate::wire::lifecycle::State;
        match self {
            SetKind::Scheduled => State::Scheduled,
            SetKind::Retry => State::Retrying,
            SetKind::Dead => State::Dead,
        }
    }

    /// The set's name as used in keys and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            SetKind::Scheduled => "scheduled",
            SetKind::Retry => "retry",
            SetKind::Dead => "dead",
        }
    }
}

impl fmt::Display for SetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SetKind {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "scheduled" => Ok(SetKind::Scheduled),
            "retry" => Ok(SetKind::Retry),
            "dead" => Ok(SetKind::Dead),
            other => Err(format!(
                "unknown set {other:?}: use scheduled, retry or dead"
            )),
        }
    }
}
