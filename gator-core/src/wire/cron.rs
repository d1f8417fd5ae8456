//! A periodic entry as stored: its schedule (a cron expression in a time zone), the job it
//! enqueues, and where it came from. What the store reads and writes; it imports nothing above
//! it. An entry is made from a payload, and makes one, in [`crate::cron`], which stands above
//! both.

use crate::error::{Error, Result};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The zone of an entry that names none.
pub const DEFAULT_TZ: &str = "UTC";

/// A parsed cron expression in a time zone: computes ticks, in ms since the Unix epoch.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    tz: TimeZone,
}

impl Schedule {
    /// Parses `expr` (5 fields, or 6 with seconds first) in IANA zone `tz`.
    pub fn parse(expr: &str, tz: &str) -> std::result::Result<Schedule, String> {
        // The shape `#[job(cron = ..)]` checks too; croner reads the fields.
        if let Err(fields) = gator_rules::cron_shape(expr) {
            return Err(format!(
                "the cron expression {expr:?} has {fields} fields; write 5 (`*/5 * * * *`: \
                 minute hour day-of-month month day-of-week) or 6 (a seconds field first)"
            ));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| format!("the cron expression {expr:?} is invalid: {e}"))?;
        let tz = TimeZone::get(tz).map_err(|_| {
            format!("time zone {tz:?} is not an IANA zone, such as `Europe/Berlin` or `UTC`")
        })?;
        Ok(Schedule { cron, tz })
    }

    /// The latest tick at or before `ms` (ms since the epoch), if there is one.
    pub fn latest_at_or_before(&self, ms: u64) -> Option<u64> {
        let at = self.zoned(ms)?;
        let tick = self.cron.find_previous_occurrence(&at, true).ok()?;
        u64::try_from(tick.timestamp().as_millisecond()).ok()
    }

    /// The first tick after `ms` (ms since the epoch), if there is one.
    pub fn next_after(&self, ms: u64) -> Option<u64> {
        let at = self.zoned(ms)?;
        let tick = self.cron.find_next_occurrence(&at, false).ok()?;
        u64::try_from(tick.timestamp().as_millisecond()).ok()
    }

    /// `ms` cut to its whole second (ticks fall on whole seconds), in the schedule's zone.
    fn zoned(&self, ms: u64) -> Option<jiff::Zoned> {
        let secs = i64::try_from(ms / 1000).ok()?;
        Some(Timestamp::from_second(secs).ok()?.to_zoned(self.tz.clone()))
    }
}

/// Where an entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `#[job(cron = ...)]`, published by every worker at start.
    Code,
    /// `Admin::add_periodic`.
    Api,
}

/// A periodic entry's definition, stored as JSON in `gator:{<queue>}:cron` (docs/wire-format.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronEntry {
    /// The entry's name, unique across queues (a job declared in code: its wire name).
    pub name: String,
    /// The cron expression, 5 or 6 fields.
    pub cron: String,
    /// The IANA time zone the expression is read in.
    pub tz: String,
    /// Where the job goes.
    pub queue: String,
    /// The job's wire name.
    pub job: String,
    /// Its arguments, a JSON array, the same for every tick.
    pub args: Value,
    /// Its flow options, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<crate::flow::FlowOptions>,
    /// Declared in code or added at run time.
    pub source: Source,
}

impl CronEntry {
    /// Parses a stored definition.
    pub fn from_json(raw: &str) -> serde_json::Result<CronEntry> {
        serde_json::from_str(raw)
    }

    /// The stored definition.
    pub fn to_json(&self) -> String {
        // A struct of strings and `Value`s always serializes.
        serde_json::to_string(self).expect("a CronEntry always serializes")
    }

    /// The entry's schedule.
    pub fn schedule(&self) -> Result<Schedule> {
        Schedule::parse(&self.cron, &self.tz).map_err(|reason| Error::InvalidCron {
            name: self.name.clone(),
            reason,
        })
    }
}
