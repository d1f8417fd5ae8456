//! Numbers as other languages write them: a timestamp or a count may arrive as an integer or
//! as a float (`time.time() * 1000` in Python, `Date.now() / 1` in some JSON encoders). Reading
//! them strictly would send a job that ran fine to the dead set on its first failure.

use serde::{Deserialize, Deserializer};

/// A JSON number as an integer: a float is truncated toward zero; negatives and NaN become 0,
/// and anything past `u64::MAX` saturates.
fn to_u64(value: &serde_json::Number) -> u64 {
    value
        .as_u64()
        .or_else(|| value.as_f64().map(|f| f as u64))
        .unwrap_or(0)
}

/// Milliseconds since the epoch, from an integer or a float.
pub(super) fn ms<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(to_u64(&serde_json::Number::deserialize(d)?))
}

/// An optional timestamp (absent or `null`: `None`), from an integer or a float.
pub(super) fn optional_ms<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Option::<serde_json::Number>::deserialize(d)?.map(|n| to_u64(&n)))
}

/// A count such as `attempt`, from an integer or a float, saturating at `u32::MAX`.
pub(super) fn count<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let n = to_u64(&serde_json::Number::deserialize(d)?);
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

/// The same rules for a number already held as JSON text (the worker's lenient reading of a
/// stored payload); `None` if the text is not a number.
pub(super) fn number_text_as_u64(text: &str) -> Option<u64> {
    serde_json::from_str::<serde_json::Number>(text)
        .ok()
        .map(|n| to_u64(&n))
}
