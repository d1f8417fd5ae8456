//! Processed and failed over time, from the per-minute and per-hour buckets workers write
//! ([`crate::store::stats`]).

use super::Admin;
use crate::error::Result;
use crate::store::stats::{self, Resolution};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How far back [`Admin::history`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistorySpan {
    /// The last 60 minutes, one point per minute.
    Hour,
    /// The last 24 hours, one point per minute (1,440 points).
    Day,
    /// The last 7 days, one point per hour (168 points).
    Week,
}

impl HistorySpan {
    fn buckets(self) -> (Resolution, u64) {
        match self {
            HistorySpan::Hour => (Resolution::Minute, 60),
            HistorySpan::Day => (Resolution::Minute, 24 * 60),
            HistorySpan::Week => (Resolution::Hour, 7 * 24),
        }
    }
}

impl FromStr for HistorySpan {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "hour" => Ok(HistorySpan::Hour),
            "day" => Ok(HistorySpan::Day),
            "week" => Ok(HistorySpan::Week),
            other => Err(format!("unknown span {other:?}: use hour, day or week")),
        }
    }
}

impl fmt::Display for HistorySpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HistorySpan::Hour => "hour",
            HistorySpan::Day => "day",
            HistorySpan::Week => "week",
        })
    }
}

/// One bucket of [`Admin::history`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HistoryPoint {
    /// The bucket's start, ms since the epoch (Redis time).
    pub at_ms: u64,
    /// Attempts that ended in it.
    pub processed: u64,
    /// Attempts that failed in it.
    pub failed: u64,
}

impl Admin {
    /// Processed and failed per bucket over `span`, oldest first, summed over every known
    /// queue (or only `queue` and its shards). The bucket holding now is the last, and still
    /// filling: workers flush their counts once a second.
    pub async fn history(
        &self,
        span: HistorySpan,
        queue: Option<&str>,
    ) -> Result<Vec<HistoryPoint>> {
        let queues = self.target_queues(queue).await?;
        let now = self.redis_time().await?;
        let (resolution, count) = span.buckets();
        let buckets = stats::buckets(
            &mut self.connection(),
            self.keys(),
            &queues,
            resolution,
            count,
            now,
        )
        .await?;
        Ok(buckets
            .into_iter()
            .map(|(at_ms, counts)| HistoryPoint {
                at_ms,
                processed: counts.processed,
                failed: counts.failed,
            })
            .collect())
    }
}
