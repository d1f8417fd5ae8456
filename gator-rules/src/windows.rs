//! The time-window grammar: `HH:MM-HH:MM`, a daily window of wall-clock time in which a job or
//! a queue may start jobs (`05:00-07:00`; `22:00-02:00` crosses midnight).
//!
//! `#[job(windows = [...])]` checks it at compile time and gator-core's `flow::Windows` at run
//! time, so both refuse the same windows. What needs a time zone database (which instant a
//! window opens, across DST changes) stays in gator-core: this crate has no dependencies.

use std::fmt;

/// Minutes in a day: 24:00, the only time that may end a window but not start one.
pub const MINUTES_PER_DAY: u16 = 24 * 60;

/// One daily window: from [`Window::start`] to [`Window::end`], in minutes after midnight. An
/// end at or before the start ends on the next day. Written back as `HH:MM-HH:MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    start: u16,
    end: u16,
}

impl Window {
    /// Minutes after midnight it opens: 0 to 1439.
    pub const fn start(&self) -> u16 {
        self.start
    }

    /// Minutes after midnight it closes: 0 to 1440 ([`MINUTES_PER_DAY`] is 24:00), never the
    /// start.
    pub const fn end(&self) -> u16 {
        self.end
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}:{:02}-{:02}:{:02}",
            self.start / 60,
            self.start % 60,
            self.end / 60,
            self.end % 60
        )
    }
}

/// What is wrong with a window. A time is quoted as written, without its surrounding spaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowProblem {
    /// Not two times around one `-` (`05:00`, `05:00-07:00-09:00`).
    NotAStartAndAnEnd,
    /// A time without a colon (`5`).
    NotHhMm(String),
    /// A time whose hours or minutes are not two ASCII digits (`5:00`, `+5:00`).
    NotTwoDigits(String),
    /// Hours past 23 (but for 24:00) or minutes past 59 (`25:00`, `05:60`).
    NotATimeOfDay(String),
    /// It starts at 24:00, which only ends a window.
    StartsAtMidnightEnd,
    /// Its start and end are the same (`05:00-05:00`): it would never open.
    Empty,
}

/// A refused window and why. Its text says what to write instead, as `#[job]` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowError {
    /// The window as given.
    pub window: String,
    /// What is wrong with it.
    pub problem: WindowProblem,
}

impl fmt::Display for WindowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let window = &self.window;
        let shape = "write HH:MM-HH:MM, as in \"05:00-07:00\" or \"22:00-02:00\" (across midnight)";
        match &self.problem {
            WindowProblem::NotAStartAndAnEnd => write!(
                f,
                "time window {window:?} is not a start and an end; {shape}"
            ),
            WindowProblem::NotHhMm(time) => {
                write!(f, "time window {window:?}: {time:?} is not HH:MM; {shape}")
            }
            WindowProblem::NotTwoDigits(time) => write!(
                f,
                "time window {window:?}: {time:?} is not HH:MM, two digits each; {shape}"
            ),
            WindowProblem::NotATimeOfDay(time) => write!(
                f,
                "time window {window:?}: {time:?} is not a time of day: hours are 00 to 23 \
                 (24:00 as an end), minutes 00 to 59; {shape}"
            ),
            WindowProblem::StartsAtMidnightEnd => write!(
                f,
                "time window {window:?} starts at 24:00, which is only an end: start at 00:00"
            ),
            WindowProblem::Empty => write!(
                f,
                "time window {window:?} is empty: its start and end are the same"
            ),
        }
    }
}

impl std::error::Error for WindowError {}

/// Reads one window, `HH:MM-HH:MM`: two digits each for hours 00 to 23 and minutes 00 to 59,
/// with 24:00 allowed as an end, and a start unlike its end. Spaces around either time are
/// ignored (`" 05:00 - 07:00 "`).
pub fn window(spec: &str) -> Result<Window, WindowError> {
    let refuse = |problem| WindowError {
        window: spec.to_owned(),
        problem,
    };
    let [start, end] = spec.trim().split('-').collect::<Vec<_>>()[..] else {
        return Err(refuse(WindowProblem::NotAStartAndAnEnd));
    };
    let (start, end) = (
        minutes(start).map_err(refuse)?,
        minutes(end).map_err(refuse)?,
    );
    if start >= MINUTES_PER_DAY {
        return Err(refuse(WindowProblem::StartsAtMidnightEnd));
    }
    if start == end {
        return Err(refuse(WindowProblem::Empty));
    }
    Ok(Window { start, end })
}

/// `HH:MM` as minutes after midnight; 24:00 is [`MINUTES_PER_DAY`].
fn minutes(time: &str) -> Result<u16, WindowProblem> {
    let time = time.trim();
    let Some((h, m)) = time.split_once(':') else {
        return Err(WindowProblem::NotHhMm(time.to_owned()));
    };
    // Two ASCII digits each: `u16::from_str` alone would also take "+5".
    let two_digits = |part: &str| part.len() == 2 && part.bytes().all(|b| b.is_ascii_digit());
    if !two_digits(h) || !two_digits(m) {
        return Err(WindowProblem::NotTwoDigits(time.to_owned()));
    }
    let digits = |part: &str| part.bytes().fold(0, |n, b| n * 10 + u16::from(b - b'0'));
    match (digits(h), digits(m)) {
        (24, 0) => Ok(MINUTES_PER_DAY),
        (h @ 0..=23, m @ 0..=59) => Ok(h * 60 + m),
        _ => Err(WindowProblem::NotATimeOfDay(time.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(spec: &str) -> WindowProblem {
        window(spec).expect_err(spec).problem
    }

    #[test]
    fn windows_are_hh_mm_to_hh_mm() {
        for good in [
            "05:00-07:00",
            "22:00-02:00",
            "00:00-24:00",
            "23:59-00:00",
            " 05:00 - 07:00 ",
        ] {
            assert!(window(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "05:00",
            "5:00-07:00",
            "05:0-07:00",
            "+5:00-07:00",
            "05:+0-07:00",
            "05:00-07:00-09:00",
            "24:00-02:00",
            "05:00-24:30",
            "05:60-07:00",
            "25:00-26:00",
            "05:00-05:00",
            "00:00-00:00",
        ] {
            assert!(window(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn each_refusal_names_its_problem() {
        assert_eq!(problem("05:00"), WindowProblem::NotAStartAndAnEnd);
        assert_eq!(problem("5-7"), WindowProblem::NotHhMm("5".into()));
        assert_eq!(
            problem(" +5:00 -07:00"),
            WindowProblem::NotTwoDigits("+5:00".into())
        );
        assert_eq!(
            problem("05:60-07:00"),
            WindowProblem::NotATimeOfDay("05:60".into())
        );
        assert_eq!(problem("24:00-02:00"), WindowProblem::StartsAtMidnightEnd);
        assert_eq!(problem("05:00-05:00"), WindowProblem::Empty);
        assert_eq!(
            window("05:00-05:00").unwrap_err().to_string(),
            "time window \"05:00-05:00\" is empty: its start and end are the same"
        );
    }

    #[test]
    fn a_window_reads_as_minutes_and_writes_back_as_hh_mm() {
        let night = window(" 22:30 - 24:00").unwrap();
        assert_eq!(
            (night.start(), night.end()),
            (22 * 60 + 30, MINUTES_PER_DAY)
        );
        assert_eq!(night.to_string(), "22:30-24:00");
        for spec in ["05:00-07:00", "23:59-00:00", "00:00-24:00"] {
            assert_eq!(window(spec).unwrap().to_string(), spec);
        }
    }
}
