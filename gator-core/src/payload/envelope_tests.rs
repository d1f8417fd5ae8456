//! The unit tests of `envelope.rs`.

use super::*;

fn nested(depth: usize) -> String {
    format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn max_depth_is_the_deepest_value_serde_json_reads() {
    assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH)).is_ok());
    let too_deep = serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH + 1));
    assert!(
        too_deep
            .unwrap_err()
            .to_string()
            .contains("recursion limit")
    );
}

#[test]
fn nesting_counts_brackets_outside_strings() {
    assert_eq!(nesting("1"), 0);
    assert_eq!(nesting(r#""[[[""#), 0);
    assert_eq!(nesting("[]"), 1);
    assert_eq!(nesting(r#"[{"a": [1, "]]]"]}, [2]]"#), 3);
    assert_eq!(nesting(r#"["\"[", [[]]] trailing [[[[["#), 3);
    assert_eq!(nesting(&nested(100_000)), 100_000);
    assert_eq!(nesting(&"[".repeat(100_000)), 100_000);
}

#[test]
fn a_payload_too_deep_keeps_its_jid_and_name_and_names_the_field() {
    let deep = nested(100_000);
    let text = format!(r#"{{"jid":"j-1","job":"send_email","args":[{deep}],"queue":"q"}}"#);
    let found = too_deep(&text).expect("too deep");
    assert_eq!(found.jid.as_deref(), Some("j-1"));
    assert_eq!(found.job.as_deref(), Some("send_email"));
    assert_eq!(found.to_string(), "arguments nested deeper than 127 levels");
    // The fields after the deep one are read too, in any order.
    let text = format!(r#"{{"args":{deep}, "job" : "a\"b", "jid":"j-2"}}"#);
    let found = too_deep(&text).expect("too deep");
    assert_eq!(
        (found.jid.as_deref(), found.job.as_deref()),
        (Some("j-2"), Some("a\"b"))
    );
}

#[test]
fn arguments_that_never_close_are_too_deep_and_cut_short() {
    let text = format!(r#"{{"jid":"j-3","job":"x","args":{}"#, "[".repeat(100_000));
    let found = too_deep(&text).expect("too deep");
    assert_eq!(found.jid.as_deref(), Some("j-3"));
    assert!(found.cut_short);
    assert_eq!(
        found.to_string(),
        "arguments nested deeper than 127 levels, and the text ends before they close"
    );
}

#[test]
fn text_that_is_not_too_deep_is_none() {
    for text in [
        "",
        "[1]",
        r#"{"jid":"j","job":"x","args":[]}"#,
        r#"{"jid":"j","job":"x","args":["#,
        &format!(r#"{{"jid":"j","args":{}}}"#, nested(MAX_DEPTH)),
        r#"{"jid": 5, "#,
    ] {
        assert_eq!(too_deep(text), None, "{text}");
    }
}

#[test]
fn a_deep_field_other_than_the_arguments_is_named_escaped() {
    let text = format!("{{\"x\\u001b\":{},\"jid\":\"j\"}}", nested(200));
    let found = too_deep(&text).expect("too deep");
    assert_eq!(
        found.to_string(),
        "field \"x\\u{1b}\" nested deeper than 127 levels"
    );
}
