//! Periodic jobs: a job enqueued on a cron schedule, once per tick across every worker.
//!
//! An entry is declared in code, on a job that takes no arguments:
//!
//! ```no_run
//! #[gator_core::job(cron = "*/5 * * * *", tz = "Europe/Berlin")]
//! async fn sweep() -> Result<(), String> {
//!     Ok(())
//! }
//! ```
//!
//! or added at run time with fixed arguments (`Admin::add_periodic`), and is stored in
//! Redis so that every worker sees it (an entry declared in code is published by each worker at
//! start; publishing is idempotent). The expression has 5 fields (minute granularity) or 6 (a
//! leading seconds field), with `L`, `W`, `#`, ranges, steps, names and `@daily`-style
//! nicknames (the [croner](https://docs.rs/croner) crate parses them), evaluated in an IANA
//! time zone (UTC by default). Across a daylight saving change, a tick in the skipped hour
//! runs at the change and one in the repeated hour runs once, as Vixie cron does.
//!
//! # Exactly once
//!
//! Every worker runs a cron loop. Each pass reads Redis's clock (`TIME`), computes each
//! entry's latest tick at or before it, and asks `cron_fire.lua` to fire that tick. The script
//! compares it with the entry's last fired tick, kept in the queue's slot, and only if it is
//! newer records it and pushes the job, in one atomic step: one enqueue per tick, whatever the
//! number of workers, and none from a worker whose own clock is off (the local clock only
//! decides how long to sleep).
//!
//! # Missed ticks
//!
//! Ticks are never fired in bulk. After downtime (no worker running, Redis away), the first
//! pass fires only the latest tick that was missed, once ("run once if missed"), then the
//! schedule goes on. A newly added entry fires no tick from before it was added. A paused entry
//! fires nothing; resumed, it waits for its next tick. `gator-worker cron run NAME` enqueues the
//! job once now, which is not a tick and changes none of this.
//!
//! A job enqueued for a tick has `created_at` = the tick, and its payload carries
//! `"cron": {"entry": NAME, "tick": MS}` (`tick` is null for a run-now).

pub use crate::wire::cron::{CronEntry, DEFAULT_TZ, Schedule, Source};

use crate::error::{Error, Result};
use crate::job::{Job, PendingJob, encode};
use crate::payload::Payload;
use serde_json::json;

/// A `#[job(cron = ...)]` declaration; the macro submits one per such job to `inventory`.
#[derive(Debug)]
pub struct CronRegistration {
    /// The cron expression.
    pub cron: &'static str,
    /// The time zone (`None`: UTC).
    pub tz: Option<&'static str>,
    /// The job's payload, with no arguments, on its default queue.
    pub payload: fn() -> Result<Payload>,
}

inventory::collect!(CronRegistration);

/// The payload of job `J` with no arguments, for a [`CronRegistration`].
pub fn payload_of<J: Job>() -> Result<Payload>
where
    J::Args: Default,
{
    Ok(encode(PendingJob::<J>::new(J::Args::default()))?.payload)
}

impl CronRegistration {
    /// The entry it declares: named after the job.
    pub fn entry(&self) -> Result<CronEntry> {
        let payload = (self.payload)()?;
        let name = payload.job.clone();
        CronEntry::new(&name, self.cron, self.tz, payload, Source::Code)
    }
}

// An entry's payload side, here rather than beside the entry (`wire::cron`): the payload
// stands above what is stored.
impl CronEntry {
    /// An entry `name` that enqueues `payload`'s job (its name, queue, arguments and flow
    /// options) on `cron` in `tz` (UTC if `None`); checks the name, expression and zone.
    pub fn new(
        name: &str,
        cron: &str,
        tz: Option<&str>,
        payload: Payload,
        source: Source,
    ) -> Result<CronEntry> {
        let invalid = |reason: String| Error::InvalidCron {
            name: name.to_owned(),
            reason,
        };
        if name.len() > 200 {
            return Err(invalid(format!(
                "a name is 1 to 200 bytes, not {}",
                name.len()
            )));
        }
        if let Err(problem) = gator_rules::visible_name(name) {
            return Err(invalid(format!(
                "a name is 1 to 200 bytes that show as themselves; it {problem}"
            )));
        }
        let tz = tz.unwrap_or(DEFAULT_TZ);
        Schedule::parse(cron, tz).map_err(invalid)?;
        Ok(CronEntry {
            name: name.to_owned(),
            cron: cron.trim().to_owned(),
            tz: tz.to_owned(),
            queue: payload.queue,
            job: payload.job,
            args: payload.args,
            flow: payload.flow.map(|flow| *flow),
            source,
        })
    }

    /// A fresh payload (new jid) of the entry's job for `tick` (ms; `None` for a run-now),
    /// enqueued at `now` (ms, Redis time): `created_at` is the tick, and `cron` says which
    /// entry and tick it came from.
    pub fn payload(&self, tick: Option<u64>, now: u64) -> Payload {
        let mut payload = Payload::new(&self.job, &self.queue, self.args.clone());
        payload.created_at = tick.unwrap_or(now);
        payload.enqueued_at = now;
        payload.flow = self.flow.clone().map(Box::new);
        payload
            .extra
            .insert("cron".to_owned(), json!({"entry": self.name, "tick": tick}));
        payload
    }
}

/// Every entry declared in code (`#[job(cron = ...)]`) linked into this binary, checked.
pub fn declared() -> Result<Vec<CronEntry>> {
    let mut entries = inventory::iter::<CronRegistration>
        .into_iter()
        .map(CronRegistration::entry)
        .collect::<Result<Vec<_>>>()?;
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;
    use serde_json::json;

    /// ms of a UTC civil time.
    fn utc(s: &str) -> u64 {
        let ts: Timestamp = s.parse().expect("a valid timestamp");
        ts.as_millisecond() as u64
    }

    #[test]
    fn the_latest_tick_is_at_or_before_the_time_given() {
        let s = Schedule::parse("*/5 * * * *", "UTC").expect("valid");
        assert_eq!(
            s.latest_at_or_before(utc("2026-01-01T10:07:30.250Z")),
            Some(utc("2026-01-01T10:05:00Z"))
        );
        assert_eq!(
            s.latest_at_or_before(utc("2026-01-01T10:05:00Z")),
            Some(utc("2026-01-01T10:05:00Z"))
        );
        assert_eq!(
            s.next_after(utc("2026-01-01T10:05:00Z")),
            Some(utc("2026-01-01T10:10:00Z"))
        );
    }

    #[test]
    fn six_fields_tick_every_second() {
        let s = Schedule::parse("* * * * * *", "UTC").expect("valid");
        let t = utc("2026-01-01T10:00:03.900Z");
        assert_eq!(s.latest_at_or_before(t), Some(utc("2026-01-01T10:00:03Z")));
        assert_eq!(s.next_after(t), Some(utc("2026-01-01T10:00:04Z")));
    }

    #[test]
    fn a_time_zone_moves_the_ticks_with_daylight_saving_time() {
        let s = Schedule::parse("0 9 * * *", "Europe/Berlin").expect("valid");
        // 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC in summer.
        assert_eq!(
            s.next_after(utc("2026-01-10T00:00:00Z")),
            Some(utc("2026-01-10T08:00:00Z"))
        );
        assert_eq!(
            s.next_after(utc("2026-07-10T00:00:00Z")),
            Some(utc("2026-07-10T07:00:00Z"))
        );
    }

    #[test]
    fn daylight_saving_time_changes_neither_skip_nor_double_a_daily_tick() {
        // Berlin's clocks went 02:00 -> 03:00 on 2026-03-29 and 03:00 -> 02:00 on 2026-10-25.
        let s = Schedule::parse("30 2 * * *", "Europe/Berlin").expect("valid");
        // 02:30 does not exist on 2026-03-29: it runs at 03:00 CEST, as Vixie cron does.
        assert_eq!(
            s.next_after(utc("2026-03-28T12:00:00Z")),
            Some(utc("2026-03-29T01:00:00Z"))
        );
        // 02:30 happens twice on 2026-10-25: it runs at the first one only.
        let first = s.next_after(utc("2026-10-24T12:00:00Z")).expect("a tick");
        let second = s.next_after(first).expect("a tick");
        assert_eq!(first, utc("2026-10-25T00:30:00Z"));
        assert_eq!(
            second,
            utc("2026-10-26T01:30:00Z"),
            "02:30 ran twice in the repeated hour"
        );
    }

    #[test]
    fn bad_expressions_and_zones_are_refused_with_the_reason() {
        let fields = Schedule::parse("* * * *", "UTC").expect_err("4 fields");
        assert!(fields.contains("has 4 fields"), "{fields}");
        let seven = Schedule::parse("0 0 0 * * * 2030", "UTC").expect_err("7 fields");
        assert!(seven.contains("has 7 fields"), "{seven}");
        let bad = Schedule::parse("61 * * * *", "UTC").expect_err("minute 61");
        assert!(bad.contains("is invalid"), "{bad}");
        let zone = Schedule::parse("* * * * *", "Mars/Olympus").expect_err("no such zone");
        assert!(zone.contains("not an IANA zone"), "{zone}");
        assert!(Schedule::parse("@daily", "UTC").is_ok());
    }

    #[test]
    fn an_entry_round_trips_and_stamps_its_tick() {
        let payload = Payload::new("sweep", "default", json!([]));
        let entry = CronEntry::new("sweep", "*/5 * * * *", None, payload, Source::Code)
            .expect("valid entry");
        assert_eq!(entry.tz, "UTC");
        let again = CronEntry::from_json(&entry.to_json()).expect("round trip");
        assert_eq!(again, entry);
        let job = entry.payload(Some(1_000), 2_000);
        assert_eq!((job.created_at, job.enqueued_at), (1_000, 2_000));
        assert_eq!(job.extra["cron"], json!({"entry": "sweep", "tick": 1000}));
        let err = CronEntry::new("", "* * * * *", None, job, Source::Api).expect_err("no name");
        assert!(err.to_string().contains("1 to 200 bytes"), "{err}");
    }
}
