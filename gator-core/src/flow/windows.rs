//! Time windows: the hours of the day, in a time zone, in which a job or a queue may start
//! jobs (`05:00-07:00`, `22:00-02:00` across midnight).
//!
//! The grammar of a window (`HH:MM-HH:MM`) is [`gator_rules::window`], which `#[job]` checks
//! too. Which instant it is comes from Redis (`TIME`); this module only turns the windows into
//! intervals of Unix time around that instant, with jiff and its bundled tz database (jiff,
//! not chrono-tz: one crate that does both the zone rules and the civil-time arithmetic, with
//! explicit handling of the hours a DST change skips or repeats).
//!
//! **DST.** A window is wall-clock time: `05:00-07:00` in `Europe/Berlin` opens at 05:00 local
//! time on every day, whatever the offset. A boundary in the hour a spring change skips moves
//! forward by the gap (02:30 becomes 03:30), and one in the hour an autumn change repeats is
//! its first occurrence (jiff's "compatible" rule, as RFC 5545 does): a window across the
//! skipped hour is an hour shorter that day, one across the repeated hour an hour longer, and
//! one wholly inside the skipped hour runs an hour later that day.

use crate::error::{Error, Result};
use gator_rules::{MINUTES_PER_DAY, Window, WindowProblem};
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use std::fmt;

/// The windows of a job or a queue, in one time zone.
#[derive(Debug, Clone)]
pub struct Windows {
    windows: Vec<Window>,
    tz: TimeZone,
    tz_name: String,
}

impl PartialEq for Windows {
    fn eq(&self, other: &Windows) -> bool {
        self.windows == other.windows && self.tz_name == other.tz_name
    }
}

impl Eq for Windows {}

impl Windows {
    /// Parses `HH:MM-HH:MM` windows in IANA zone `tz` (UTC if `None`).
    pub fn parse(specs: &[impl AsRef<str>], tz: Option<&str>) -> Result<Windows> {
        if specs.is_empty() {
            return Err(invalid(
                "no time window given: use e.g. `05:00-07:00`".into(),
            ));
        }
        let tz_name = tz.unwrap_or("UTC").to_owned();
        let zone = TimeZone::get(&tz_name).map_err(|_| {
            invalid(format!(
                "time zone {tz_name:?} is not an IANA zone, such as `Europe/Berlin` or `UTC`"
            ))
        })?;
        let windows = specs
            .iter()
            .map(|spec| parse_window(spec.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Windows {
            windows,
            tz: zone,
            tz_name,
        })
    }

    /// Reads the value stored in a queue's flow hash: `05:00-07:00,22:00-23:00 Europe/Berlin`.
    pub fn from_stored(stored: &str) -> Result<Windows> {
        let (specs, tz) = match stored.split_once(' ') {
            Some((specs, tz)) => (specs, Some(tz)),
            None => (stored, None),
        };
        let specs: Vec<&str> = specs.split(',').filter(|s| !s.is_empty()).collect();
        Windows::parse(&specs, tz)
    }

    /// The time zone's name.
    pub fn tz_name(&self) -> &str {
        &self.tz_name
    }

    /// The window that contains `at_ms` (Unix ms), or else the next one, as `(open, close)` in
    /// Unix ms; overlapping or touching windows count as one. (`None` only at the end of
    /// representable time.)
    pub fn current_or_next(&self, at_ms: i64) -> Option<(i64, i64)> {
        let at = Timestamp::from_millisecond(at_ms).ok()?;
        let today = at.to_zoned(self.tz.clone()).date();
        let mut intervals = Vec::new();
        for offset in -1..=8i64 {
            let Ok(day) = today.checked_add(offset.days()) else {
                continue;
            };
            for window in &self.windows {
                if let Some(interval) = self.interval_on(day, *window) {
                    intervals.push(interval);
                }
            }
        }
        intervals.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(intervals.len());
        for (open, close) in intervals {
            match merged.last_mut() {
                Some(last) if open <= last.1 => last.1 = last.1.max(close),
                _ => merged.push((open, close)),
            }
        }
        merged.into_iter().find(|&(_, close)| close > at_ms)
    }

    /// Whether `at_ms` lies inside a window.
    pub fn contains(&self, at_ms: i64) -> bool {
        self.current_or_next(at_ms)
            .is_some_and(|(open, _)| open <= at_ms)
    }

    /// `at_ms` if it lies inside a window, else the next opening.
    pub fn next_start(&self, at_ms: i64) -> Option<i64> {
        self.current_or_next(at_ms).map(|(open, _)| open.max(at_ms))
    }

    /// The value stored in a queue's flow hash (see [`Windows::from_stored`]).
    pub fn stored(&self) -> String {
        self.to_string()
    }

    /// The windows as written, `HH:MM-HH:MM` each.
    pub fn specs(&self) -> Vec<String> {
        self.windows.iter().map(ToString::to_string).collect()
    }

    /// `window` on local date `day`, as Unix ms; `None` if it is empty that day.
    fn interval_on(&self, day: Date, window: Window) -> Option<(i64, i64)> {
        let start = self.instant(day, window.start())?;
        let end_day = if window.end() <= window.start() {
            day.tomorrow().ok()?
        } else {
            day
        };
        let end = self.instant(end_day, window.end())?;
        (end > start).then_some((start, end))
    }

    /// Local time `minutes` after midnight of `day` (24:00 is the next midnight), as Unix ms.
    fn instant(&self, day: Date, minutes: u16) -> Option<i64> {
        let (day, minutes) = if minutes >= MINUTES_PER_DAY {
            (day.tomorrow().ok()?, minutes - MINUTES_PER_DAY)
        } else {
            (day, minutes)
        };
        let time = Time::new((minutes / 60) as i8, (minutes % 60) as i8, 0, 0).ok()?;
        let zoned = DateTime::from_parts(day, time)
            .to_zoned(self.tz.clone())
            .ok()?;
        Some(zoned.timestamp().as_millisecond())
    }
}

impl fmt::Display for Windows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.specs().join(","))?;
        write!(f, " {}", self.tz_name)
    }
}

/// One window, by the grammar `#[job(windows = ...)]` checks too ([`gator_rules::window`]),
/// worded as the run-time API always has: a window that is not `HH:MM-HH:MM` gets one message.
fn parse_window(spec: &str) -> Result<Window> {
    gator_rules::window(spec).map_err(|e| match e.problem {
        WindowProblem::Empty => invalid(e.to_string()),
        _ => invalid(format!(
            "time window {spec:?} is not HH:MM-HH:MM, as in `05:00-07:00` or `22:00-02:00`"
        )),
    })
}

fn invalid(reason: String) -> Error {
    Error::InvalidFlow { reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unix ms of a wall-clock time in `tz`.
    fn at(tz: &str, civil: &str) -> i64 {
        let dt: DateTime = civil.parse().unwrap();
        dt.to_zoned(TimeZone::get(tz).unwrap())
            .unwrap()
            .timestamp()
            .as_millisecond()
    }

    #[test]
    fn a_window_across_midnight_contains_both_sides_of_it() {
        let w = Windows::parse(&["22:00-02:00"], Some("UTC")).unwrap();
        assert!(w.contains(at("UTC", "2026-03-10T23:30")));
        assert!(w.contains(at("UTC", "2026-03-11T01:59")));
        assert!(!w.contains(at("UTC", "2026-03-11T02:00")));
        assert_eq!(
            w.next_start(at("UTC", "2026-03-11T12:00")),
            Some(at("UTC", "2026-03-11T22:00"))
        );
        assert_eq!(
            w.current_or_next(at("UTC", "2026-03-11T01:00")),
            Some((at("UTC", "2026-03-10T22:00"), at("UTC", "2026-03-11T02:00")))
        );
    }

    #[test]
    fn windows_follow_wall_clock_time_across_dst_changes() {
        let tz = "Europe/Berlin";
        let w = Windows::parse(&["05:00-07:00"], Some(tz)).unwrap();
        // 2026-03-29: clocks go from 02:00 to 03:00 in Berlin (UTC+1 -> UTC+2).
        let (open, close) = w.current_or_next(at(tz, "2026-03-29T01:00")).unwrap();
        assert_eq!(open, at("UTC", "2026-03-29T03:00")); // 05:00 CEST
        assert_eq!(close - open, 2 * 3_600_000);
        let (open, _) = w.current_or_next(at(tz, "2026-03-28T08:00")).unwrap();
        assert_eq!(open, at("UTC", "2026-03-29T03:00"));
        let (before, _) = w.current_or_next(at(tz, "2026-03-28T01:00")).unwrap();
        assert_eq!(before, at("UTC", "2026-03-28T04:00")); // 05:00 CET
        // A window across the skipped hour is an hour shorter; across the repeated one, longer.
        let night = Windows::parse(&["01:00-04:00"], Some(tz)).unwrap();
        let (open, close) = night.current_or_next(at(tz, "2026-03-29T00:00")).unwrap();
        assert_eq!(close - open, 2 * 3_600_000);
        let (open, close) = night.current_or_next(at(tz, "2026-10-25T00:00")).unwrap();
        assert_eq!(close - open, 4 * 3_600_000);
    }

    #[test]
    fn a_window_inside_the_skipped_hour_runs_an_hour_later_that_day() {
        let tz = "Europe/Berlin";
        let w = Windows::parse(&["02:15-02:45"], Some(tz)).unwrap();
        let (open, close) = w.current_or_next(at(tz, "2026-03-29T00:00")).unwrap();
        assert_eq!(open, at(tz, "2026-03-29T03:15"));
        assert_eq!(close - open, 30 * 60_000);
        let (open, _) = w.current_or_next(at(tz, "2026-03-29T04:00")).unwrap();
        assert_eq!(open, at(tz, "2026-03-30T02:15"));
    }

    #[test]
    fn touching_windows_merge_into_one_interval() {
        let w = Windows::parse(&["22:00-24:00", "00:00-01:00"], None).unwrap();
        assert_eq!(
            w.current_or_next(at("UTC", "2026-05-01T23:00")),
            Some((at("UTC", "2026-05-01T22:00"), at("UTC", "2026-05-02T01:00")))
        );
    }

    #[test]
    fn stored_form_reads_back() {
        let w = Windows::parse(&["05:00-07:00", "22:00-23:30"], Some("Europe/Berlin")).unwrap();
        assert_eq!(w.stored(), "05:00-07:00,22:00-23:30 Europe/Berlin");
        assert_eq!(Windows::from_stored(&w.stored()).unwrap(), w);
    }

    #[test]
    fn bad_windows_are_refused_with_the_reason() {
        for (specs, tz) in [
            (vec!["5-7"], None),
            (vec!["05:00-05:00"], None),
            (vec!["05:00-07:00"], Some("Mars/Olympus")),
        ] {
            let err = Windows::parse(&specs, tz).unwrap_err().to_string();
            assert!(!err.is_empty(), "{specs:?} {tz:?}");
        }
        let none: [&str; 0] = [];
        assert!(Windows::parse(&none, None).is_err());
    }
}
