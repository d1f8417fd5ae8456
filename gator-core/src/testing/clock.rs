//! The fake clock: [`Fake::now`], [`Fake::advance`], and the cron ticks an advance crosses
//! ([`Fake::cron`]).

use super::record::Recorded;
use super::{Fake, lock};
use crate::clock::to_ms;
use crate::cron::{CronEntry, Schedule};
use crate::job::Job;
use std::time::{Duration, SystemTime};

/// The most ticks of one entry an advance records: advancing a year over a per-second entry
/// ends, and a test that means it still gets more ticks than it can look at.
const MAX_TICKS: usize = 10_000;

/// A cron entry the test turned on, with its parsed schedule.
pub(crate) struct Ticking {
    entry: CronEntry,
    schedule: Schedule,
}

impl Fake {
    /// The fake clock's time: the real time when [`super::fake`] was called (to the
    /// millisecond, the unit of every time Gator stores), plus every
    /// [`Fake::advance`] since. It stands still otherwise. Due times, retries, time windows
    /// and cron ticks are read on it.
    pub fn now(&self) -> SystemTime {
        self.mode.now()
    }

    /// Moves the fake clock forward by `by`. It runs nothing: [`Fake::drain`] then runs what
    /// has come due. Each tick it crosses of the cron entries turned on ([`Fake::cron`])
    /// records one dispatch, as a worker would enqueue it (at most 10,000 ticks of an entry
    /// per advance: the earliest).
    ///
    /// # Panics
    ///
    /// If the clock would pass the end of what a `SystemTime` holds.
    #[track_caller]
    pub fn advance(&self, by: Duration) -> &Fake {
        let (from, to) = {
            let mut clock = lock(&self.mode.clock);
            let from = *clock;
            let Some(to) = from.checked_add(by) else {
                panic!("advancing the fake clock by {by:?} passes the end of time");
            };
            *clock = to;
            (from, to)
        };
        let fired = ticks(&lock(&self.mode.cron), to_ms(from), to_ms(to));
        for (tick, payload) in fired {
            self.mode.record(Recorded::of(&payload, None, tick));
        }
        self
    }

    /// Turns on every periodic job declared in code (`#[job(cron = ..)]`) linked into this
    /// test binary: from now on, each of their ticks an [`Fake::advance`] crosses records a
    /// dispatch of the job on its queue. Off until asked, so a test that does not care never
    /// sees them. Entries added at run time (`Admin::add_periodic`) live in Redis and do not
    /// tick here.
    ///
    /// # Panics
    ///
    /// If an entry's expression or time zone is invalid (a worker would refuse to start).
    #[track_caller]
    pub fn cron(&self) -> &Fake {
        self.tick(declared())
    }

    /// Turns on the periodic job `J` alone (its `#[job(cron = ..)]`): see [`Fake::cron`].
    ///
    /// # Panics
    ///
    /// If `J` has no `cron` in its `#[job]`, or it is invalid.
    #[track_caller]
    pub fn cron_of<J: Job>(&self) -> &Fake {
        let entries: Vec<CronEntry> = declared()
            .into_iter()
            .filter(|entry| entry.job == J::NAME)
            .collect();
        assert!(
            !entries.is_empty(),
            "{} has no `cron = ..` in its #[job]: nothing to tick",
            J::NAME
        );
        self.tick(entries)
    }

    /// Turns on `entries` (each once, however often asked).
    #[track_caller]
    fn tick(&self, entries: Vec<CronEntry>) -> &Fake {
        let mut on = lock(&self.mode.cron);
        for entry in entries {
            if on.iter().any(|t| t.entry.name == entry.name) {
                continue;
            }
            let schedule = entry
                .schedule()
                .unwrap_or_else(|e| panic!("a cron entry declared in code is invalid: {e}"));
            on.push(Ticking { entry, schedule });
        }
        self
    }
}

/// Every entry declared in code in this binary.
#[track_caller]
fn declared() -> Vec<CronEntry> {
    crate::cron::declared()
        .unwrap_or_else(|e| panic!("a cron entry declared in code is invalid: {e}"))
}

/// The ticks of `entries` after `from_ms` up to and including `to_ms` (at most
/// [`MAX_TICKS`] of each), in time order, each with the payload a worker would enqueue.
fn ticks(entries: &[Ticking], from_ms: u64, to_ms: u64) -> Vec<(u64, crate::payload::Payload)> {
    let mut fired = Vec::new();
    for ticking in entries {
        let mut at = from_ms;
        for _ in 0..MAX_TICKS {
            match ticking.schedule.next_after(at) {
                Some(tick) if tick <= to_ms => {
                    // As the cron loop does: created at the tick, marked with the entry.
                    fired.push((tick, ticking.entry.payload(Some(tick), tick)));
                    at = tick;
                }
                _ => break,
            }
        }
    }
    // Stable: entries due at one tick keep their (name) order.
    fired.sort_by_key(|(tick, _)| *tick);
    fired
}
