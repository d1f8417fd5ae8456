//! Large payloads, compressed: a job whose arguments' JSON text is over a threshold (16 KiB
//! unless set: [`crate::client::ClientBuilder::compress_over`], `GATOR_COMPRESS_OVER`) is
//! stored with its arguments zstd-compressed, and every reader (the worker, `Admin`, search,
//! the dashboard) sees them decoded.
//!
//! On the wire (`docs/wire-format.md`, "Packed arguments") only `args` changes: it is `null`,
//! and a `packed` object holds the arguments' JSON text compressed:
//! `{"jid":..,"job":..,"args":null,..,"packed":{"codec":"zstd","raw":65536,"data":"<base64>"}}`.
//! Every other field stays where the Lua scripts read it (`jid`, `flow`, `unique`, ...), so no
//! script changes; a reader knows a packed payload by the `packed` field alone.
//!
//! The plain path pays nothing: a payload under the threshold is stored byte for byte as
//! before, and the decision is a comparison of a size the client counts anyway (the payload
//! limit's). Decoding is bounded: the arguments may not inflate past the payload limit (a
//! small zstd frame that inflates to gigabytes is refused with [`PackError::TooLarge`]).

use super::Payload;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::io::Read as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default threshold: arguments whose JSON text is over 16 KiB are compressed.
pub const DEFAULT_COMPRESS_OVER: usize = 16 * 1024;

/// The environment variable a client reads its threshold from when it is built without one:
/// bytes, or with a unit, as `GATOR_MAX_PAYLOAD` (`16KiB`, `1MiB`).
pub const COMPRESS_OVER_ENV: &str = "GATOR_COMPRESS_OVER";

/// The payload field that holds packed arguments.
pub const FIELD: &str = "packed";

/// The one codec written and read.
pub const ZSTD: &str = "zstd";

/// The zstd level: 3 is zstd's default, fast on both ends and within a few percent of the
/// best ratio on JSON.
const LEVEL: i32 = 3;

/// The largest decoded arguments [`Payload::from_json`] accepts, for readers that know no
/// limit of their own (`Admin`, search, the dashboard): the largest limit of any client built
/// in this process, and never under the default limit.
static DECODE_LIMIT: AtomicUsize = AtomicUsize::new(super::limit::DEFAULT_MAX_PAYLOAD);

/// Arguments as stored when packed: the `packed` field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packed {
    /// How `data` is compressed: `"zstd"`.
    pub codec: String,
    /// The size of the arguments' JSON text, in bytes, before compression.
    pub raw: usize,
    /// The compressed arguments: one zstd frame, in standard base64 with padding. Empty (and
    /// absent on the wire) for arguments stored aside.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub data: String,
    /// Whether the arguments are stored aside, in the job's side key
    /// ([`super::aside`]): `codec` then says how the key's bytes are encoded (`zstd` or
    /// `none`). Absent for arguments held in `data`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aside: bool,
}

/// What a reader learns of a packed payload once decoded: for the dashboard and `job show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Packing {
    /// The arguments' JSON text, in bytes.
    pub raw: usize,
    /// The arguments as stored (the base64 text of the compressed frame, or the side key's
    /// bytes once read), in bytes; 0 for arguments stored aside and not read.
    pub stored: usize,
    /// Whether the arguments are stored aside, in the job's side key ([`super::aside`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aside: bool,
}

/// Why packed arguments cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The `packed` field is not `{"codec":..,"raw":..,"data":..}`.
    #[error("the packed arguments are not an object with codec, raw and data: {0}")]
    Field(String),
    /// A codec other than zstd.
    #[error("the packed arguments use codec {0:?}; this version reads \"zstd\" only")]
    Codec(String),
    /// `data` is not base64.
    #[error("the packed arguments are not base64: {0}")]
    Base64(String),
    /// The arguments inflate past the limit: a zstd bomb, or a limit lower than the
    /// producer's.
    #[error(
        "the packed arguments inflate past {max} bytes, over the payload limit: refused (raise the limit with GATOR_MAX_PAYLOAD / --max-payload if the job is genuine)"
    )]
    TooLarge {
        /// The limit, in bytes.
        max: usize,
    },
    /// `data` is not a zstd frame.
    #[error("the packed arguments are not a zstd frame: {0}")]
    Zstd(String),
    /// The arguments are in the job's side key ([`super::aside`]), not in the payload.
    #[error("the arguments are stored aside, in the job's own key: read them with store::aside")]
    Aside,
    /// The decoded arguments are not JSON.
    #[error("the packed arguments do not decode to JSON: {0}")]
    Json(String),
}

/// Raises the limit [`Payload::from_json`] decodes packed arguments up to, to `bytes` if it
/// is higher. Each client calls it with its own limit.
pub fn raise_decode_limit(bytes: usize) {
    DECODE_LIMIT.fetch_max(bytes, Ordering::Relaxed);
}

/// The limit [`Payload::from_json`] decodes packed arguments up to.
pub fn decode_limit() -> usize {
    DECODE_LIMIT.load(Ordering::Relaxed)
}

/// The threshold `GATOR_COMPRESS_OVER` sets, or the default.
pub fn from_env() -> crate::error::Result<usize> {
    match std::env::var(COMPRESS_OVER_ENV) {
        Ok(value) => super::limit::parse(&value).map_err(|_| crate::error::Error::InvalidSetting {
            name: COMPRESS_OVER_ENV,
            value,
            expected: "a size between 1KiB and 512MiB, such as 16384, 16KiB or 1MiB",
        }),
        Err(_) => Ok(DEFAULT_COMPRESS_OVER),
    }
}

/// `args` (their JSON text) compressed into a `packed` field.
pub fn pack_text(args: &str) -> Packed {
    // Compressing bytes in memory cannot fail short of an allocation failure, which aborts.
    let frame = zstd::bulk::compress(args.as_bytes(), LEVEL).unwrap_or_default();
    Packed {
        codec: ZSTD.to_owned(),
        raw: args.len(),
        data: base64::engine::general_purpose::STANDARD.encode(frame),
        aside: false,
    }
}

/// Packs `payload`'s arguments in place: `args` becomes `null` and the `packed` field holds
/// them compressed. The caller decided the payload is over the threshold. Arguments that do
/// not shrink (random bytes: base64 grows them by a third) stay as they are; returns whether
/// they were packed.
pub fn pack(payload: &mut Payload) -> bool {
    // A Value always serializes.
    let text = serde_json::to_string(&payload.args).unwrap_or_default();
    let packed = pack_text(&text);
    // The `packed` object's own fields cost about 40 bytes.
    if packed.data.len() + 40 >= text.len() {
        return false;
    }
    payload.args = serde_json::Value::Null;
    payload.packing = Some(Packing {
        raw: packed.raw,
        stored: packed.data.len(),
        aside: false,
    });
    // A struct of strings and numbers always converts.
    let value = serde_json::to_value(packed).unwrap_or_default();
    payload.extra.insert(FIELD.to_owned(), value);
    true
}

/// The arguments' JSON text from the `packed` field's JSON text, decoded up to `max` bytes.
pub fn unpack_text(packed: &str, max: usize) -> Result<Box<RawValue>, PackError> {
    let packed: Packed =
        serde_json::from_str(packed).map_err(|e| PackError::Field(e.to_string()))?;
    unpack(&packed, max)
}

/// The arguments' JSON text from `packed`, decoded up to `max` bytes.
pub fn unpack(packed: &Packed, max: usize) -> Result<Box<RawValue>, PackError> {
    if packed.aside {
        return Err(PackError::Aside);
    }
    if packed.codec != ZSTD {
        return Err(PackError::Codec(gator_rules::cut(&packed.codec, 40).into()));
    }
    let frame = base64::engine::general_purpose::STANDARD
        .decode(&packed.data)
        .map_err(|e| PackError::Base64(e.to_string()))?;
    json_text(inflate(&frame, max)?)
}

/// One zstd frame decompressed, up to `max` bytes.
pub(crate) fn inflate(frame: &[u8], max: usize) -> Result<Vec<u8>, PackError> {
    let decoder =
        zstd::stream::read::Decoder::new(frame).map_err(|e| PackError::Zstd(e.to_string()))?;
    // Bounded: read at most one byte past the limit, whatever the frame claims.
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    let mut text = Vec::new();
    decoder
        .take(limit)
        .read_to_end(&mut text)
        .map_err(|e| PackError::Zstd(e.to_string()))?;
    if text.len() > max {
        return Err(PackError::TooLarge { max });
    }
    Ok(text)
}

/// Decoded arguments as JSON text.
pub(crate) fn json_text(text: Vec<u8>) -> Result<Box<RawValue>, PackError> {
    let text = String::from_utf8(text).map_err(|e| PackError::Json(e.to_string()))?;
    RawValue::from_string(text).map_err(|e| PackError::Json(e.to_string()))
}

/// Decodes `payload`'s packed arguments in place, if it has any: `args` gets them, the
/// `packed` field goes, and [`Payload::packing`] says what was stored.
pub fn unpack_payload(payload: &mut Payload, max: usize) -> Result<(), PackError> {
    let Some(field) = payload.extra.remove(FIELD) else {
        return Ok(());
    };
    let packed: Packed =
        serde_json::from_value(field.clone()).map_err(|e| PackError::Field(e.to_string()))?;
    if packed.aside {
        // Stored aside: the marker stays, so the payload is written back as it came; a reader
        // that wants the arguments reads the side key (`store::aside::load`).
        payload.extra.insert(FIELD.to_owned(), field);
        payload.packing = Some(Packing {
            raw: packed.raw,
            stored: 0,
            aside: true,
        });
        return Ok(());
    }
    let text = unpack(&packed, max)?;
    payload.args = serde_json::from_str(text.get()).map_err(|e| PackError::Json(e.to_string()))?;
    payload.packing = Some(Packing {
        raw: packed.raw,
        stored: packed.data.len(),
        aside: false,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn packed_arguments_round_trip_and_are_smaller() {
        let args = json!(["x".repeat(64 * 1024), 7]);
        let mut payload = Payload::new("big", "q", args.clone());
        assert!(pack(&mut payload));
        let stored = payload.to_json();
        assert!(stored.len() < 8 * 1024, "{} bytes", stored.len());
        assert!(stored.contains(r#""args":null"#), "{stored}");
        let read = Payload::from_json(&stored).expect("decodes");
        assert_eq!(read.args, args);
        assert!(read.extra.get(FIELD).is_none());
        let raw = serde_json::to_string(&args).expect("json").len();
        assert_eq!(read.packing.map(|p| p.raw), Some(raw));
        // Written back packed, as it came.
        assert_eq!(read.to_json(), stored);
    }

    #[test]
    fn arguments_that_do_not_shrink_stay_inline() {
        let noise: String = (0..32 * 1024)
            .map(|_| char::from(b'!' + rand::random::<u8>() % 90))
            .collect();
        let mut payload = Payload::new("noise", "q", json!([noise]));
        let before = payload.to_json();
        assert!(!pack(&mut payload));
        assert_eq!(payload.to_json(), before);
    }

    #[test]
    fn a_zstd_bomb_is_refused_with_a_clear_error() {
        // 64 MiB of zeros compress to a few KiB.
        let zeros = format!("[\"{}\"]", "0".repeat(64 * 1024 * 1024));
        let packed = pack_text(&zeros);
        assert!(packed.data.len() < 64 * 1024, "{}", packed.data.len());
        let err = unpack(&packed, 1024 * 1024).expect_err("refused");
        assert!(matches!(err, PackError::TooLarge { max } if max == 1024 * 1024));
        assert!(err.to_string().contains("inflate past"), "{err}");
    }

    #[test]
    fn bad_packed_fields_say_why() {
        let err = |text: &str| unpack_text(text, 1 << 20).expect_err("bad").to_string();
        assert!(err(r#"{"codec":"lz4","raw":1,"data":""}"#).contains("lz4"));
        assert!(err(r#"{"codec":"zstd","raw":1,"data":"!!"}"#).contains("base64"));
        assert!(err(r#"{"codec":"zstd","raw":1,"data":"AAAA"}"#).contains("zstd frame"));
        assert!(err(r#"[1]"#).contains("codec, raw and data"));
    }
}
