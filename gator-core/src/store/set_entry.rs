//! A queue's sorted sets of jobs (scheduled, retry, dead) and their entries as read: what
//! `store::sets` and `store::later` (the scheduled jobs beyond the horizon) both list.

use super::keys::Keys;
use crate::payload::Payload;
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

/// One job in a set, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SetEntry {
    /// Which set it is in.
    pub kind: SetKind,
    /// The queue the set belongs to.
    pub queue: String,
    /// Its score: due time (scheduled, retry) or time of death (dead), ms since the epoch. A
    /// job scheduled beyond the horizon (`store::later`): its own due time.
    pub score_ms: u64,
    /// Its score exactly as stored (another producer may write fractions of a ms): where a
    /// page after it starts. A job scheduled beyond the horizon is listed at the start of its
    /// due time's minute.
    pub score: f64,
    /// The member exactly as stored (needed to remove it).
    pub raw: String,
    /// The member parsed, if it is a payload document.
    pub payload: Option<Payload>,
}

impl SetEntry {
    /// The entry's jid, if it parsed.
    pub fn jid(&self) -> Option<&str> {
        self.payload.as_ref().map(|p| p.jid.as_str())
    }
}

/// Where a page of `kind` for `queue` starts, by score: entries with a score above `score`
/// (`inclusive`: at or above it), less the first `skip` of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Start {
    /// The lowest score (`None`: from the lowest there is).
    pub score: Option<f64>,
    /// Whether an entry at `score` itself is in.
    pub inclusive: bool,
    /// How many entries to step over first (those at `score` already shown).
    pub skip: usize,
}

/// An entry of `kind` for `queue` as read: its member and score.
pub(crate) fn entry(kind: SetKind, queue: &str, raw: String, score: f64) -> SetEntry {
    let payload = Payload::from_json(&raw).ok();
    SetEntry {
        kind,
        queue: queue.to_owned(),
        score_ms: score as u64,
        score,
        raw,
        payload,
    }
}
