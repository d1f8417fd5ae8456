//! The unit tests of `document.rs`: parsing leniently, and rewriting byte for byte.

use super::*;

#[test]
fn a_unique_job_says_when_its_lock_goes_and_a_plain_one_has_none() {
    let read = |raw: &str| {
        PayloadDocument::parse(raw.as_bytes())
            .expect("a payload")
            .unique_until()
    };
    use crate::unique::UniqueUntil;
    let head = r#"{"jid":"j","job":"x","args":[]"#;
    assert_eq!(read(&format!("{head}}}")), None);
    assert_eq!(
        read(&format!(
            r#"{head},"unique":{{"key":"k","until":"start","ttl":5}}}}"#
        )),
        Some(UniqueUntil::Start)
    );
    // `until` defaults to success, as the scripts read it.
    assert_eq!(
        read(&format!(r#"{head},"unique":{{"key":"k","ttl":5}}}}"#)),
        Some(UniqueUntil::Success)
    );
    // Unreadable: it took no lock the worker can name.
    assert_eq!(read(&format!(r#"{head},"unique":"k"}}"#)), None);
}

#[test]
fn a_rewrite_changes_only_the_named_fields_and_keeps_the_rest_as_it_came() {
    let raw = br#"{"jid":"j1","job":"send","args":[1, 2.50],"queue":"q","created_at":1732300000000.5,"trace":{"a":1e3},"attempt":0}"#;
    let doc = PayloadDocument::parse(raw).expect("a payload");
    assert_eq!((doc.jid(), doc.job()), ("j1", "send"));
    assert_eq!(doc.args().get(), "[1, 2.50]");
    let out = doc.rewrite(&[("attempt", "1".into()), ("error", "\"boom\"".into())]);
    assert_eq!(
        out,
        r#"{"jid":"j1","job":"send","args":[1, 2.50],"queue":"q","created_at":1732300000000.5,"trace":{"a":1e3},"attempt":1,"error":"boom"}"#
    );
}

#[test]
fn attempt_may_be_a_float_or_missing() {
    let doc = PayloadDocument::parse(br#"{"jid":"j","job":"x","args":[],"attempt":3.0}"#)
        .expect("a payload");
    assert_eq!(doc.attempt(), 3);
    let doc = PayloadDocument::parse(br#"{"jid":"j","job":"x","args":[]}"#).expect("a payload");
    assert_eq!(doc.attempt(), 0);
}

#[test]
fn what_is_not_a_payload_says_why() {
    let err = |bytes: &[u8]| {
        PayloadDocument::parse(bytes)
            .expect_err("refused")
            .to_string()
    };
    assert!(err(b"\xff\xfe{}").contains("UTF-8"));
    assert!(err(br#"["j","x",[]]"#).contains("not a JSON object"));
    assert!(err(b"garbage").contains("not a JSON object"));
    assert!(err(br#"{"job":"x","args":[]}"#).contains("missing field `jid`"));
    assert!(err(br#"{"jid":7,"job":"x","args":[]}"#).contains("invalid type: integer `7`"));
    assert!(err(br#"{"jid":"j","job":"x"}"#).contains("missing field `args`"));
    assert!(err(br#"{"jid":"j","job":"x","args":[]"#).contains("EOF"));
}

#[test]
fn plain_args_are_borrowed_and_packed_ones_decoded_within_the_limit() {
    let doc =
        PayloadDocument::parse(br#"{"jid":"j","job":"x","args":[1,"a"]}"#).expect("a payload");
    assert!(!doc.is_packed());
    let args = doc.args_unpacked(16).expect("plain");
    assert!(
        matches!(args, Cow::Borrowed(_)),
        "the plain path copies nothing"
    );
    let packed = crate::payload::packed::pack_text(&format!("[\"{}\"]", "y".repeat(4096)));
    let text = format!(
        r#"{{"jid":"j","job":"x","args":null,"packed":{}}}"#,
        serde_json::to_string(&packed).expect("json")
    );
    let doc = PayloadDocument::parse(text.as_bytes()).expect("a payload");
    assert!(doc.is_packed());
    assert_eq!(doc.args_unpacked(8192).expect("decoded").get().len(), 4100);
    assert!(doc.args_unpacked(4096).is_err(), "over the limit");
}

#[test]
fn escaped_strings_are_read_unescaped() {
    let doc =
        PayloadDocument::parse(br#"{"jid":"a\"b","job":"x\u00e9","args":[]}"#).expect("a payload");
    assert_eq!((doc.jid(), doc.job()), ("a\"b", "x\u{e9}"));
}
