//! What a search looks for and where (`admin::search`): the places a job can be, and the
//! field of a job the text is matched against, each with the names the API and CLI take.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// Waiting in its queue (or parked on a controlled queue).
    Queued,
    /// Scheduled to run later.
    Scheduled,
    /// Waiting for its next attempt.
    Retry,
    /// In the dead set.
    Dead,
}

impl Place {
    /// All four, in lifecycle order.
    pub const ALL: [Place; 4] = [Place::Queued, Place::Scheduled, Place::Retry, Place::Dead];
}

impl FromStr for Place {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "queued" => Ok(Place::Queued),
            "scheduled" => Ok(Place::Scheduled),
            "retry" | "retries" => Ok(Place::Retry),
            "dead" => Ok(Place::Dead),
            other => Err(format!(
                "unknown place {other:?}: use queued, scheduled, retry or dead"
            )),
        }
    }
}

/// What the text is matched against (case-insensitive substring, but for [`SearchField::Jid`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchField {
    /// Anywhere in the stored payload.
    #[default]
    Any,
    /// The jid, from its start (a jid or a prefix of one).
    Jid,
    /// The job's wire name.
    Job,
    /// The arguments, as JSON text (`"acme"` finds `["acme", 3]`).
    Args,
    /// The last error.
    Error,
}

impl FromStr for SearchField {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "any" | "" => Ok(SearchField::Any),
            "jid" => Ok(SearchField::Jid),
            "job" => Ok(SearchField::Job),
            "args" => Ok(SearchField::Args),
            "error" => Ok(SearchField::Error),
            other => Err(format!(
                "unknown field {other:?}: use any, jid, job, args or error"
            )),
        }
    }
}
