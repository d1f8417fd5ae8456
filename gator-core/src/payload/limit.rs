//! The largest payload a client stores: a job's whole JSON document, arguments and all. Redis
//! holds every job in memory, the worker parses it, and the dashboard and API show it; a job
//! that carries 50 MB belongs in object storage, with its key in the arguments.
//!
//! A producer that is not Gator's client (a raw `RPUSH` from another language) is not held to
//! this: the worker sends a payload over its client's limit to the dead set as it came, one
//! copy, with the reason.

use crate::error::{Error, Result};
use crate::payload::Payload;

/// The default limit: 512 KiB, ample for arguments that are ids, addresses and small
/// documents.
pub const DEFAULT_MAX_PAYLOAD: usize = 512 * 1024;

/// The environment variable a client reads its limit from when it is built without one:
/// bytes, or with a unit (`512KiB`, `1MiB`, `2MB`).
pub const MAX_PAYLOAD_ENV: &str = "GATOR_MAX_PAYLOAD";

/// The smallest limit accepted: below it, ordinary jobs would not fit.
pub const MIN_MAX_PAYLOAD: usize = 1024;

/// `payload`'s size as stored, in bytes, counted without building the text.
pub fn size_of(payload: &Payload) -> usize {
    let mut counter = Counter(0);
    // Writing to a counter cannot fail, and a Payload always serializes (see `to_json`).
    let _ = serde_json::to_writer(&mut counter, payload);
    counter.0
}

/// Refuses `payload` if it is larger than `max` bytes; else returns its size. The size is the
/// payload's with its arguments inline, before any compression ([`super::packed`]): what a
/// worker holds in memory once it decoded them, and so the bound of that decoding too.
pub fn check(payload: &Payload, max: usize) -> Result<usize> {
    let bytes = size_of(payload);
    if bytes > max {
        return Err(Error::PayloadTooLarge {
            job: crate::error::cut_name(&payload.job),
            bytes,
            max,
        });
    }
    Ok(bytes)
}

/// Parses a limit: a number of bytes, or one with a unit (`KB`, `KiB`, `MB`, `MiB`, case
/// ignored), at least [`MIN_MAX_PAYLOAD`] and at most 512 MiB (Redis's largest string).
pub fn parse(text: &str) -> std::result::Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "kib" | "k" => 1024,
        "mb" => 1_000_000,
        "mib" | "m" => 1024 * 1024,
        other => return Err(format!("unknown unit {other:?}: use B, KB, KiB, MB or MiB")),
    };
    let bytes = number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("{text:?} is not a size such as 524288, 512KiB or 1MiB"))?;
    if !(MIN_MAX_PAYLOAD..=512 * 1024 * 1024).contains(&bytes) {
        return Err(format!("{text:?} is out of range: between 1KiB and 512MiB"));
    }
    Ok(bytes)
}

/// The limit `GATOR_MAX_PAYLOAD` sets, or the default.
pub fn from_env() -> Result<usize> {
    match std::env::var(MAX_PAYLOAD_ENV) {
        Ok(value) => parse(&value).map_err(|_| Error::InvalidSetting {
            name: MAX_PAYLOAD_ENV,
            value,
            expected: "a size between 1KiB and 512MiB, such as 524288, 512KiB or 1MiB",
        }),
        Err(_) => Ok(DEFAULT_MAX_PAYLOAD),
    }
}

/// Counts the bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_counted_is_the_size_stored() {
        let payload = Payload::new("send", "mail", serde_json::json!(["a@b.c", 3, "é"]));
        assert_eq!(size_of(&payload), payload.to_json().len());
        assert!(check(&payload, size_of(&payload)).is_ok());
        let refused = check(&payload, size_of(&payload) - 1).expect_err("one byte over");
        assert!(refused.to_string().contains("send"), "{refused}");
    }

    #[test]
    fn limits_parse_with_units_and_within_range() {
        assert_eq!(parse("524288"), Ok(524_288));
        assert_eq!(parse("512KiB"), Ok(524_288));
        assert_eq!(parse("1 MiB"), Ok(1_048_576));
        assert_eq!(parse("2mb"), Ok(2_000_000));
        assert!(parse("10").is_err());
        assert!(parse("1GiB").is_err());
        assert!(parse("lots").is_err());
        assert!(parse("99999999999999999999").is_err());
    }
}
