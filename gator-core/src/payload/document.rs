//! A stored payload as the worker reads it: parsed once, leniently, and written back as it
//! came.
//!
//! The worker needs only `jid`, `job`, `args` (and `attempt`, `chain`). Every field is kept as
//! the JSON text it arrived as, in its order, so a failure rewrites only the fields it records
//! (`attempt`, `error`, `failed_at`, ...) and every other field, including numbers a stricter
//! reader would refuse (`"created_at": 1732300000000.5`) or reformat, is written back byte for
//! byte.

use super::ChainLink;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// Why bytes are not a payload a worker can run.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The bytes are not UTF-8 text.
    #[error("not UTF-8 text: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    /// The text is not a JSON object.
    #[error("not a JSON object: {0}")]
    NotJson(#[from] serde_json::Error),
    /// A field the worker needs is missing or of the wrong type.
    #[error("field {name:?} {problem}")]
    Field {
        /// The field.
        name: &'static str,
        /// What is wrong with it.
        problem: &'static str,
    },
}

/// A payload parsed for running: its fields as JSON text, in their stored order.
#[derive(Debug)]
pub struct PayloadDocument<'a> {
    fields: Vec<(Cow<'a, str>, &'a RawValue)>,
    jid: Cow<'a, str>,
    job: Cow<'a, str>,
    args: &'a RawValue,
}

impl<'a> PayloadDocument<'a> {
    /// Reads `bytes` as a payload: a JSON object with a string `jid`, a string `job` and an
    /// `args` field. Other fields are kept, whatever they hold.
    pub fn parse(bytes: &'a [u8]) -> Result<PayloadDocument<'a>, DocumentError> {
        let text = std::str::from_utf8(bytes)?;
        let Fields(fields) = serde_json::from_str(text)?;
        let string = |name: &'static str| -> Result<Cow<'a, str>, DocumentError> {
            let raw = find(&fields, name).ok_or(DocumentError::Field {
                name,
                problem: "is missing",
            })?;
            serde_json::from_str::<Cow<'a, str>>(raw.get()).map_err(|_| DocumentError::Field {
                name,
                problem: "is not a string",
            })
        };
        let jid = string("jid")?;
        let job = string("job")?;
        let args = find(&fields, "args").ok_or(DocumentError::Field {
            name: "args",
            problem: "is missing",
        })?;
        Ok(PayloadDocument {
            fields,
            jid,
            job,
            args,
        })
    }

    /// The job id.
    pub fn jid(&self) -> &str {
        &self.jid
    }

    /// The job's wire name.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The arguments, as JSON text.
    pub fn args(&self) -> &'a RawValue {
        self.args
    }

    /// Failed attempts so far: an integer or a float; 0 if absent or not a number.
    pub fn attempt(&self) -> u32 {
        self.field("attempt")
            .and_then(|raw| super::lenient::number_text_as_u64(raw.get()))
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The chain link of a chain step; `None` if absent or not a link.
    pub fn chain(&self) -> Option<ChainLink> {
        serde_json::from_str(self.field("chain")?.get()).ok()
    }

    /// A field's JSON text, as stored.
    pub fn field(&self, name: &str) -> Option<&'a RawValue> {
        find(&self.fields, name)
    }

    /// The payload with `changes` applied (field name, new value as JSON text): changed fields
    /// keep their place, new ones go at the end, and every other field is copied as it came.
    pub fn rewrite(&self, changes: &[(&str, String)]) -> String {
        let mut out = String::with_capacity(
            self.fields
                .iter()
                .map(|(k, v)| k.len() + v.get().len() + 4)
                .sum::<usize>()
                + changes
                    .iter()
                    .map(|(k, v)| k.len() + v.len() + 4)
                    .sum::<usize>()
                + 2,
        );
        out.push('{');
        let mut first = true;
        let mut push = |out: &mut String, key: &str, value: &str| {
            if !first {
                out.push(',');
            }
            first = false;
            // A key is a str, which always serializes.
            out.push_str(&serde_json::to_string(key).unwrap_or_default());
            out.push(':');
            out.push_str(value);
        };
        for (key, value) in &self.fields {
            match changes.iter().find(|(name, _)| name == key) {
                Some((_, changed)) => push(&mut out, key, changed),
                None => push(&mut out, key, value.get()),
            }
        }
        for (name, value) in changes {
            if find(&self.fields, name).is_none() {
                push(&mut out, name, value);
            }
        }
        out.push('}');
        out
    }
}

fn find<'a>(fields: &[(Cow<'a, str>, &'a RawValue)], name: &str) -> Option<&'a RawValue> {
    fields
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| *value)
}

/// A JSON object's fields in order, each value as its text.
struct Fields<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Fields<'de>, M::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some((key, value)) = map.next_entry::<Cow<'de, str>, &'de RawValue>()? {
                    fields.push((key, value));
                }
                Ok(Fields(fields))
            }
        }
        d.deserialize_map(FieldsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(err(b"[1,2]").contains("JSON object"));
        assert!(err(b"garbage").contains("JSON object"));
        assert!(err(br#"{"job":"x","args":[]}"#).contains("\"jid\" is missing"));
        assert!(err(br#"{"jid":7,"job":"x","args":[]}"#).contains("\"jid\" is not a string"));
        assert!(err(br#"{"jid":"j","job":"x"}"#).contains("\"args\" is missing"));
    }

    #[test]
    fn escaped_strings_are_read_unescaped() {
        let doc = PayloadDocument::parse(br#"{"jid":"a\"b","job":"x\u00e9","args":[]}"#)
            .expect("a payload");
        assert_eq!((doc.jid(), doc.job()), ("a\"b", "x\u{e9}"));
    }
}
