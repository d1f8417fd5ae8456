//! Large payloads, stored aside: a job whose arguments are still over a threshold once packed
//! ([`super::packed`]), or that do not shrink, keeps them in a key of its own,
//! `gator:{<queue>}:payload:<jid>` (STRING), in the slot of its queue, and its payload carries
//! a marker in their place: `"args":null,...,"packed":{"codec":"zstd","raw":N,"aside":true}`
//! (`codec` `none` when the key holds the arguments' JSON text as it is). The threshold is
//! 256 KiB of stored arguments unless set ([`crate::client::ClientBuilder::aside_over`],
//! `GATOR_ASIDE_OVER`); `usize::MAX` turns it off.
//!
//! 1. **Written with the job**: the side key is `SET` in the same `MULTI` as the job's push
//!    (`store::queue::enqueue`): never a job without its key, never a key without its job.
//!    Only that path writes aside; every other (scheduled, unique, chain and workflow steps,
//!    a ticketed dispatch to a controlled queue) stores the payload whole, packed, as
//!    [`Payload::to_json`] writes it.
//! 2. **Fetched with it**: the worker `GET`s the key after the fetch, for a marked payload
//!    only (it parses the payload anyway, and learns the mark from its `packed` field). So
//!    `fetch.lua` is unchanged and the plain path pays nothing; an aside job pays one round
//!    trip, next to the hundreds of KiB it moves. (Returning the key from `fetch.lua` would
//!    cost every fetched payload a `string.find` for the marker.)
//! 3. **Its lifetime is the job's**: the scripts that end a job for good delete it in the same
//!    step (success, cancellation, deletion, clearing, dead-set trims); retries, the dead set,
//!    recovery and a run-now keep the jid, the queue, and so the key. A job never crosses
//!    queues in Gator: every move is within its queue's slot.
//!
//! Reading the key is bounded by the same decode limit as packed arguments. Readers: the
//! worker (`processor/decode.rs`), `Admin::load_aside` (the job's page, `job show`), and
//! search, at most `admin::search::ASIDE_READS` side keys per call.

use super::Payload;
use super::packed::{FIELD, PackError, Packed, ZSTD};
use base64::Engine as _;
use serde_json::value::RawValue;

/// The default threshold: arguments over 256 KiB as stored (packed or not) go aside.
pub const DEFAULT_ASIDE_OVER: usize = 256 * 1024;

/// The environment variable a client reads its threshold from when it is built without one,
/// in the size syntax of `GATOR_MAX_PAYLOAD`.
pub const ASIDE_OVER_ENV: &str = "GATOR_ASIDE_OVER";

/// The codec of arguments stored aside as their JSON text.
pub const NONE: &str = "none";

/// The text that marks a payload stored aside, as Gator writes it.
const MARK: &[u8] = b"\"aside\":true";

/// A client's threshold: `set` (at least 1 KiB), else `GATOR_ASIDE_OVER`, else the default.
pub fn threshold(set: Option<usize>) -> crate::error::Result<usize> {
    if let Some(bytes) = set {
        return Ok(bytes.max(super::limit::MIN_MAX_PAYLOAD));
    }
    match std::env::var(ASIDE_OVER_ENV) {
        Ok(value) => super::limit::parse(&value).map_err(|_| crate::error::Error::InvalidSetting {
            name: ASIDE_OVER_ENV,
            value,
            expected: "a size between 1KiB and 512MiB, such as 262144, 256KiB or 1MiB",
        }),
        Err(_) => Ok(DEFAULT_ASIDE_OVER),
    }
}

/// Marks `payload` (of `bytes` with its arguments inline, already packed if it shrank) to be
/// stored aside if its arguments as stored are over `over` bytes.
pub fn choose(payload: &mut Payload, bytes: usize, over: usize) {
    let stored = match payload.packing {
        Some(p) => bytes.saturating_sub(p.raw).saturating_add(p.stored),
        None => bytes,
    };
    payload.aside = stored > over;
}

/// For a payload marked to go aside: its text with the marker in place of its arguments, and
/// the side key's bytes (the zstd frame, or the arguments' JSON text). `None` for any other.
pub fn split(payload: &Payload) -> Option<(String, Vec<u8>)> {
    if !payload.aside {
        return None;
    }
    let mut marked = payload.clone();
    marked.aside = false;
    marked.packing = None;
    let packed = marked
        .extra
        .remove(FIELD)
        .and_then(|v| serde_json::from_value::<Packed>(v).ok());
    let (codec, raw, bytes) = match packed {
        Some(p) => {
            let frame = base64::engine::general_purpose::STANDARD
                .decode(&p.data)
                .ok()?;
            (ZSTD, p.raw, frame)
        }
        None => {
            let text = serde_json::to_string(&marked.args).ok()?;
            (NONE, text.len(), text.into_bytes())
        }
    };
    marked.args = serde_json::Value::Null;
    let marker = Packed {
        codec: codec.to_owned(),
        raw,
        data: String::new(),
        aside: true,
    };
    marked
        .extra
        .insert(FIELD.to_owned(), serde_json::to_value(marker).ok()?);
    Some((marked.to_json(), bytes))
}

/// Whether a payload as stored may be marked aside, read from its bytes without parsing them:
/// for a payload Gator wrote (it starts `{"jid":`, and a marked one has `"args":null` after
/// its name), a look at its head, and a search only if its arguments are null; any other is
/// searched whole. A false positive costs a `DEL` of a key that does not exist.
pub fn marked(raw: &[u8]) -> bool {
    const HEAD: &[u8] = b"{\"jid\":\"";
    const ARGS: &[u8] = b",\"args\":";
    if raw.starts_with(HEAD) {
        let head = &raw[..raw.len().min(512)];
        if let Some(at) = head.windows(ARGS.len()).position(|w| w == ARGS)
            && !raw[at + ARGS.len()..].starts_with(b"null")
        {
            return false;
        }
    }
    contains(raw, MARK)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The marker of a payload's `packed` field (its JSON text), if it says the arguments are
/// stored aside.
pub fn marker(packed: &str) -> Option<Packed> {
    serde_json::from_str::<Packed>(packed)
        .ok()
        .filter(|p| p.aside)
}

/// The arguments' JSON text from a side key's `bytes`, decoded per `marker`'s codec, up to
/// `max` bytes.
pub fn unpack(marker: &Packed, bytes: Vec<u8>, max: usize) -> Result<Box<RawValue>, PackError> {
    let text = match marker.codec.as_str() {
        ZSTD => super::packed::inflate(&bytes, max)?,
        NONE if bytes.len() > max => return Err(PackError::TooLarge { max }),
        NONE => bytes,
        other => return Err(PackError::Codec(gator_rules::cut(other, 40).into())),
    };
    super::packed::json_text(text)
}

/// Fills a payload read aside ([`Payload::from_json`] left its marker) with the arguments
/// from its side key's `bytes`, for a reader. It is written back with its marker.
pub fn fill(payload: &mut Payload, bytes: Vec<u8>, max: usize) -> Result<(), PackError> {
    let Some(marker) = payload
        .extra
        .get(FIELD)
        .and_then(|v| serde_json::from_value::<Packed>(v.clone()).ok())
        .filter(|p| p.aside)
    else {
        return Ok(());
    };
    let stored = bytes.len();
    let text = unpack(&marker, bytes, max)?;
    payload.args = serde_json::from_str(text.get()).map_err(|e| PackError::Json(e.to_string()))?;
    if let Some(packing) = &mut payload.packing {
        packing.stored = stored;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_packed_payload_splits_into_a_marker_and_its_frame_and_reads_back() {
        let args = json!(["x".repeat(300 * 1024)]);
        let mut payload = Payload::new("big", "q", args.clone());
        assert!(super::super::packed::pack(&mut payload));
        payload.aside = true;
        let (text, bytes) = split(&payload).expect("aside");
        assert!(text.len() < 1024, "{text}");
        assert!(text.contains(r#""args":null"#) && text.contains(r#""aside":true"#));
        assert!(marked(text.as_bytes()));
        let mut read = Payload::from_json(&text).expect("parses");
        assert!(read.args.is_null());
        assert_eq!(read.packing.map(|p| p.aside), Some(true));
        fill(&mut read, bytes, 1 << 20).expect("fills");
        assert_eq!(read.args, args);
        // Written back as it came: the marker, not the arguments.
        assert_eq!(read.to_json(), text);
    }

    #[test]
    fn noise_goes_aside_as_text_and_plain_payloads_are_not_marked() {
        let mut payload = Payload::new("noise", "q", json!(["a\"aside\":true"]));
        assert!(!marked(payload.to_json().as_bytes()));
        payload.aside = true;
        let (text, bytes) = split(&payload).expect("aside");
        assert!(text.contains(r#""codec":"none""#), "{text}");
        let marker = marker(r#"{"codec":"none","raw":3,"aside":true}"#).expect("marker");
        assert_eq!(
            unpack(&marker, bytes.clone(), 1024).expect("reads").get(),
            r#"["a\"aside\":true"]"#
        );
        assert!(matches!(
            unpack(&marker, bytes, 4),
            Err(PackError::TooLarge { max: 4 })
        ));
        assert!(!marked(
            br#"{"jid":"j","job":"x","args":[1],"packed":{"aside":true}}"#
        ));
        assert!(marked(
            br#"{"job":"x","args":null,"packed":{"aside":true}}"#
        ));
    }
}
