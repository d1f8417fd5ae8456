//! The duration notation: `250ms`, `30s`, `1m30s`, `1h 30m`, `1.5h`, `2days`. The command line
//! reads durations with the humantime crate; `#[job(timeout = "30s", backoff = [...],
//! unique_for = "10m", debounce = "5s")]` and gator-core (a rate's interval, `100/1s`;
//! `GATOR_WAIT_TIMEOUT`) read them here, so that a duration written for one reads the same
//! everywhere.
//!
//! Why not humantime itself: a proc-macro crate links this one, which has no dependencies. The
//! parser is humantime 2.4's `parse_duration`, step for step: the same units, the same
//! fractions, the same quirks (spaces inside a number are skipped, `"0"` alone needs no unit),
//! the same error texts and byte offsets. The tests compare the two on every form the project
//! uses and on generated text, so a humantime upgrade that changes the notation fails them.

use std::fmt;
use std::str::Chars;
use std::time::Duration;

/// Why a duration does not read; its text is humantime's, word for word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// A character that is neither a digit, a letter, `µ`, `.` nor a space, at this byte offset.
    InvalidCharacter(usize),
    /// Something other than a number where one was expected, at this byte offset (`2 hours
    /// min`, `m sec`).
    NumberExpected(usize),
    /// A unit that is not one of [`parse_duration`]'s, or none (`unit` empty: `"30"`).
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The number before it.
        value: u64,
    },
    /// A number too large, or a fraction finer than a nanosecond (`0.5ns`).
    NumberOverflow,
    /// Nothing but spaces.
    Empty,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::InvalidCharacter(offset) => {
                write!(f, "invalid character at {offset}")
            }
            DurationError::NumberExpected(offset) => write!(f, "expected number at {offset}"),
            DurationError::UnknownUnit { unit, value } if unit.is_empty() => {
                write!(f, "time unit needed, for example {value}sec or {value}ms")
            }
            DurationError::UnknownUnit { unit, .. } => write!(
                f,
                "unknown time unit {unit:?}, supported units: ns, us/µs, ms, sec, min, hours, \
                 days, weeks, months, years (and few variations)"
            ),
            DurationError::NumberOverflow => f.write_str(
                "number is too large or cannot be represented without a lack of precision \
                 (values below 1ns are not supported)",
            ),
            DurationError::Empty => f.write_str("value was empty"),
        }
    }
}

impl std::error::Error for DurationError {}

/// Reads a duration: numbers each followed by a unit, spaces between them optional.
///
/// Units: `nanos nsec ns`, `usec us µs`, `millis msec ms`, `seconds second secs sec s`,
/// `minutes minute min mins m`, `hours hour hr hrs h`, `days day d`, `weeks week wk wks w`,
/// `months month M` (30.44 days), `years year yr yrs y` (365.25 days). A number may have a
/// fraction (`1.5h`) if it comes to whole nanoseconds. `"0"` alone is zero.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    Parser {
        iter: text.chars(),
        src: text,
    }
    .parse()
}

/// `d` in whole milliseconds, as the wire stores spans; saturating, so that `Duration::MAX`
/// is a very long span rather than a panic.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A number's fractional part: `numerator / denominator`, the denominator a power of ten.
#[derive(Clone, Copy)]
struct Fraction {
    numerator: u64,
    denominator: u64,
}

/// Walks `src` once; offsets are bytes into it.
struct Parser<'a> {
    iter: Chars<'a>,
    src: &'a str,
}

fn is_unit_char(c: char) -> bool {
    c.is_ascii_alphabetic() || c == 'µ'
}

impl Parser<'_> {
    /// Reads a number (digits, spaces skipped, maybe a fraction), then its unit (letters, up
    /// to a space or the next digit), adds them, and goes on until the text ends.
    fn parse(mut self) -> Result<Duration, DurationError> {
        let mut n = self.first_digit()?.ok_or(DurationError::Empty)?;
        let mut out = Duration::ZERO;
        'outer: loop {
            let mut frac = None;
            let mut off = self.off();
            while let Some(c) = self.iter.next() {
                match c {
                    '0'..='9' => n = push_digit(n, c)?,
                    c if c.is_whitespace() => {}
                    c if is_unit_char(c) => break,
                    '.' => {
                        frac = Some(self.fraction(&mut off)?);
                        break;
                    }
                    _ => return Err(DurationError::InvalidCharacter(off)),
                }
                off = self.off();
            }
            // The unit starts at the letter that ended the number (`off` was not moved past it).
            let start = off;
            let mut off = self.off();
            while let Some(c) = self.iter.next() {
                match c {
                    '0'..='9' => {
                        self.add(n, frac, start, off, &mut out)?;
                        n = digit(c);
                        continue 'outer;
                    }
                    c if c.is_whitespace() => break,
                    c if is_unit_char(c) => {}
                    _ => return Err(DurationError::InvalidCharacter(off)),
                }
                off = self.off();
            }
            self.add(n, frac, start, off, &mut out)?;
            n = match self.first_digit()? {
                Some(n) => n,
                None => return Ok(out),
            };
        }
    }

    /// The next number's first digit, past spaces; `None` at the end of the text.
    fn first_digit(&mut self) -> Result<Option<u64>, DurationError> {
        let off = self.off();
        for c in self.iter.by_ref() {
            match c {
                '0'..='9' => return Ok(Some(digit(c))),
                c if c.is_whitespace() => {}
                _ => return Err(DurationError::NumberExpected(off)),
            }
        }
        Ok(None)
    }

    /// The digits after a `.`, up to the unit; `off` follows the last one read.
    fn fraction(&mut self, off: &mut usize) -> Result<Fraction, DurationError> {
        let (mut numerator, mut denominator) = (0u64, 1u64);
        while let Some(c) = self.iter.next() {
            match c {
                '0'..='9' => {
                    denominator = checked(denominator.checked_mul(10))?;
                    numerator = push_digit(numerator, c)?;
                }
                c if c.is_whitespace() => {}
                c if is_unit_char(c) => break,
                _ => return Err(DurationError::InvalidCharacter(*off)),
            }
            *off = self.off();
        }
        if denominator == 1 {
            // No digit after the separator: "1.s".
            return Err(DurationError::InvalidCharacter(*off));
        }
        Ok(Fraction {
            numerator,
            denominator,
        })
    }

    fn off(&self) -> usize {
        self.src.len() - self.iter.as_str().len()
    }

    /// Adds `n` (and `frac`) of the unit written at `start..end` to `out`.
    fn add(
        &self,
        n: u64,
        frac: Option<Fraction>,
        start: usize,
        end: usize,
        out: &mut Duration,
    ) -> Result<(), DurationError> {
        let unit = &self.src[start..end];
        let Some(unit) = Unit::from_name(unit) else {
            return Err(DurationError::UnknownUnit {
                unit: unit.to_owned(),
                value: n,
            });
        };
        let (secs, nanos) = unit.whole(n)?;
        add_to(secs, nanos, out)?;
        if let Some(frac) = frac {
            let (secs, nanos) = unit.fraction(frac)?;
            add_to(secs, nanos, out)?;
        }
        Ok(())
    }
}

fn digit(c: char) -> u64 {
    u64::from(c) - u64::from('0')
}

fn push_digit(n: u64, c: char) -> Result<u64, DurationError> {
    checked(n.checked_mul(10).and_then(|n| n.checked_add(digit(c))))
}

fn checked(n: Option<u64>) -> Result<u64, DurationError> {
    n.ok_or(DurationError::NumberOverflow)
}

/// `n / d` if it is whole: a fraction finer than a nanosecond does not read.
fn exact_div(n: u64, d: u64) -> Result<u64, DurationError> {
    match n % d {
        0 => Ok(n / d),
        _ => Err(DurationError::NumberOverflow),
    }
}

/// `out + secs + nanos`, or an overflow (where humantime would panic past `u64::MAX` secs).
fn add_to(secs: u64, nanos: u64, out: &mut Duration) -> Result<(), DurationError> {
    let nanos = checked(u64::from(out.subsec_nanos()).checked_add(nanos))?;
    let secs = checked(secs.checked_add(nanos / 1_000_000_000))?;
    let secs = checked(out.as_secs().checked_add(secs))?;
    // Below a second once the whole seconds are carried.
    let nanos = (nanos % 1_000_000_000) as u32;
    *out = Duration::new(secs, nanos);
    Ok(())
}

/// A month: 30.44 days, in seconds.
const MONTH_SECS: u64 = 2_630_016;
/// A year: 365.25 days, in seconds.
const YEAR_SECS: u64 = 31_557_600;

#[derive(Clone, Copy)]
enum Unit {
    Nanosecond,
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    fn from_name(name: &str) -> Option<Unit> {
        Some(match name {
            "nanos" | "nsec" | "ns" => Unit::Nanosecond,
            "usec" | "us" | "µs" => Unit::Microsecond,
            "millis" | "msec" | "ms" => Unit::Millisecond,
            "seconds" | "second" | "secs" | "sec" | "s" => Unit::Second,
            "minutes" | "minute" | "min" | "mins" | "m" => Unit::Minute,
            "hours" | "hour" | "hr" | "hrs" | "h" => Unit::Hour,
            "days" | "day" | "d" => Unit::Day,
            "weeks" | "week" | "wk" | "wks" | "w" => Unit::Week,
            "months" | "month" | "M" => Unit::Month,
            "years" | "year" | "yr" | "yrs" | "y" => Unit::Year,
            _ => return None,
        })
    }

    /// `n` units as (seconds, nanoseconds).
    fn whole(self, n: u64) -> Result<(u64, u64), DurationError> {
        let times = |k: u64| checked(n.checked_mul(k));
        Ok(match self {
            Unit::Nanosecond => (0, n),
            Unit::Microsecond => (0, times(1000)?),
            Unit::Millisecond => (0, times(1_000_000)?),
            Unit::Second => (n, 0),
            Unit::Minute => (times(60)?, 0),
            Unit::Hour => (times(3600)?, 0),
            Unit::Day => (times(86_400)?, 0),
            Unit::Week => (times(7 * 86_400)?, 0),
            Unit::Month => (times(MONTH_SECS)?, 0),
            Unit::Year => (times(YEAR_SECS)?, 0),
        })
    }

    /// A fraction of a unit as (seconds, nanoseconds): in nanoseconds up to a minute, in
    /// seconds from an hour up (so `0.5ns` and `1.0000001h` do not read), as humantime counts.
    fn fraction(self, frac: Fraction) -> Result<(u64, u64), DurationError> {
        let part = |k: u64| exact_div(checked(frac.numerator.checked_mul(k))?, frac.denominator);
        Ok(match self {
            Unit::Nanosecond => return Err(DurationError::NumberOverflow),
            Unit::Microsecond => (0, part(1000)?),
            Unit::Millisecond => (0, part(1_000_000)?),
            Unit::Second => (0, part(1_000_000_000)?),
            Unit::Minute => (0, part(60_000_000_000)?),
            Unit::Hour => (part(3600)?, 0),
            Unit::Day => (part(86_400)?, 0),
            Unit::Week => (part(7 * 86_400)?, 0),
            Unit::Month => (part(MONTH_SECS)?, 0),
            Unit::Year => (part(YEAR_SECS)?, 0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both parsers' answers for `text`, errors as their texts.
    fn both(text: &str) -> (Result<Duration, String>, Result<Duration, String>) {
        (
            parse_duration(text).map_err(|e| e.to_string()),
            humantime::parse_duration(text).map_err(|e| e.to_string()),
        )
    }

    #[test]
    fn durations_read_as_on_the_command_line() {
        let ms = |text| parse_duration(text).map(millis);
        assert_eq!(ms("250ms"), Ok(250));
        assert_eq!(ms("30s"), Ok(30_000));
        assert_eq!(ms("1m30s"), Ok(90_000));
        assert_eq!(ms("1h 30m"), Ok(5_400_000));
        assert_eq!(ms("1.5h"), Ok(5_400_000));
        assert_eq!(ms("5m"), Ok(300_000));
        assert_eq!(ms("1d"), Ok(86_400_000));
        assert!(ms("30").is_err() && ms("s").is_err() && ms("3 fortnights").is_err());
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }

    /// What the project writes (README, examples, defaults), and the mistakes it guards against.
    #[rustfmt::skip]
    const FORMS: &[&str] = &[
        "250ms", "30s", "1m30s", "1h 30m", "2h", "1day", "1d", "10m", "5s", "0s", "0ms", "500us",
        "5 µs", "1µs", "1.5h", "0.25s", "180days", "24h", "12h", "25s", "500ms", "2m", "1w", "1M",
        "2y", "3 years", "1 0s", "30 s ", "0", " 0", "", "   ", "30", "s", "1.s", "1.", ".5s",
        "0.5ns", "1.0000001h", "1.5", "18446744073709551615s", "18446744073709551616s",
        "584942417356y", "1m 30", "1h-30m", "1h,30m", "2 hours min", "3 fortnights", "1e3s",
        "1s x", "1s  x", "\u{661}s",
    ];

    #[test]
    fn every_form_the_project_writes_reads_as_humantime_reads_it() {
        for text in FORMS {
            let (ours, theirs) = both(text);
            assert_eq!(ours, theirs, "{text:?}");
        }
    }

    #[test]
    fn generated_text_reads_as_humantime_reads_it() {
        #[rustfmt::skip]
        const PIECES: &[&str] = &[
            "0", "1", "5", "9", "12", ".", " ", "\t", "s", "m", "h", "d", "ms", "us", "µ", "M",
            "y", "in", "x", "-", "ns", "99999999999",
        ];
        // xorshift64: the same cases on every run, no dependency.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..50_000 {
            let len = next() % 7;
            // Mostly starting with a number: text that does not is refused at once.
            let first = PIECES[(next() % 5) as usize];
            let text: String = std::iter::once(first)
                .chain((0..len).map(|_| PIECES[(next() % PIECES.len() as u64) as usize]))
                .collect();
            let (ours, theirs) = both(&text);
            assert_eq!(ours, theirs, "{text:?}");
        }
    }
}
