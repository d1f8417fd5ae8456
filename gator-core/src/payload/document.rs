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
    #[error("not a JSON object")]
    NotObject,
    /// The object is not valid JSON, or lacks a field the worker needs (`jid`, `job`, `args`),
    /// or has one of the wrong type.
    #[error("not a payload: {0}")]
    Invalid(#[from] serde_json::Error),
    /// A field (the arguments) is nested deeper than anything parses
    /// ([`super::envelope::MAX_DEPTH`]); the envelope still says the job's jid and name.
    #[error("{0}")]
    TooDeep(Box<super::envelope::TooDeep>),
}

/// A payload parsed for running: the fields a worker needs, borrowed from the stored text.
#[derive(Debug)]
pub struct PayloadDocument<'a> {
    text: &'a str,
    jid: Cow<'a, str>,
    job: Cow<'a, str>,
    args: &'a RawValue,
    attempt: Option<&'a RawValue>,
    chain: Option<&'a RawValue>,
    workflow: Option<&'a RawValue>,
    reply: Option<&'a RawValue>,
    reply_failed: Option<&'a RawValue>,
    created_at: Option<&'a RawValue>,
    enqueued_at: Option<&'a RawValue>,
    flow: Option<&'a RawValue>,
    headers: Option<&'a RawValue>,
    unique: Option<&'a RawValue>,
    packed: Option<&'a RawValue>,
    expires_at: Option<&'a RawValue>,
    on_expire: Option<&'a RawValue>,
    durable: Option<&'a RawValue>,
}

/// What running needs; any other field is skipped here and kept by [`PayloadDocument::rewrite`].
#[derive(serde::Deserialize)]
struct Needed<'a> {
    #[serde(borrow)]
    jid: Cow<'a, str>,
    #[serde(borrow)]
    job: Cow<'a, str>,
    #[serde(borrow)]
    args: &'a RawValue,
    #[serde(borrow, default)]
    attempt: Option<&'a RawValue>,
    #[serde(borrow, default)]
    chain: Option<&'a RawValue>,
    #[serde(borrow, default)]
    workflow: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reply: Option<&'a RawValue>,
    #[serde(borrow, default)]
    reply_failed: Option<&'a RawValue>,
    #[serde(borrow, default)]
    created_at: Option<&'a RawValue>,
    #[serde(borrow, default)]
    enqueued_at: Option<&'a RawValue>,
    #[serde(borrow, default)]
    flow: Option<&'a RawValue>,
    #[serde(borrow, default)]
    headers: Option<&'a RawValue>,
    unique: Option<&'a RawValue>,
    #[serde(borrow, default)]
    packed: Option<&'a RawValue>,
    expires_at: Option<&'a RawValue>,
    #[serde(borrow, default)]
    on_expire: Option<&'a RawValue>,
    #[serde(borrow, default)]
    durable: Option<&'a RawValue>,
}

impl<'a> PayloadDocument<'a> {
    /// Reads `bytes` as a payload: a JSON object with a string `jid`, a string `job` and an
    /// `args` field. Other fields may hold anything.
    pub fn parse(bytes: &'a [u8]) -> Result<PayloadDocument<'a>, DocumentError> {
        let text = std::str::from_utf8(bytes)?;
        if !text.trim_start().starts_with('{') {
            // serde would read a JSON array into the fields by position.
            return Err(DocumentError::NotObject);
        }
        let needed: Needed<'a> = serde_json::from_str(text).map_err(|e| {
            // Only a failure pays the scan: a payload whose envelope is readable but one of whose
            // values is too deep (or never closes) keeps its jid and name.
            match super::envelope::too_deep(text) {
                Some(deep) => DocumentError::TooDeep(Box::new(deep)),
                None => DocumentError::Invalid(e),
            }
        })?;
        Ok(PayloadDocument {
            text,
            jid: needed.jid,
            job: needed.job,
            args: needed.args,
            attempt: needed.attempt,
            chain: needed.chain,
            workflow: needed.workflow,
            reply: needed.reply,
            reply_failed: needed.reply_failed,
            created_at: needed.created_at,
            enqueued_at: needed.enqueued_at,
            flow: needed.flow,
            headers: needed.headers,
            unique: needed.unique,
            packed: needed.packed,
            expires_at: needed.expires_at,
            on_expire: needed.on_expire,
            durable: needed.durable,
        })
    }

    /// What a durable job saved in earlier runs (`durable`: its checkpoint, its steps'
    /// results, its sleeps; `context::durable`), as JSON text; `None` for any other job.
    pub fn durable(&self) -> Option<&'a str> {
        self.durable.map(RawValue::get)
    }

    /// The payload's whole text, as stored.
    pub fn text(&self) -> &str {
        self.text
    }

    /// When a unique job's lock is released ([`crate::unique`]); `None` for a job that is not
    /// unique (or whose `unique` field does not parse: it took no lock the worker could name).
    pub fn unique_until(&self) -> Option<crate::unique::UniqueUntil> {
        let unique: crate::unique::Unique = serde_json::from_str(self.unique?.get()).ok()?;
        Some(unique.until)
    }

    /// An expiring job's deadline ([`crate::expiry`]), ms since the epoch on Redis's clock;
    /// `None` for a job without one (or whose `expires_at` is not a number).
    pub fn expires_at_ms(&self) -> Option<u64> {
        super::lenient::number_text_as_u64(self.expires_at?.get())
    }

    /// What becomes of this job if it expires: dropped only if its `on_expire` says `"drop"`.
    pub fn on_expire(&self) -> crate::expiry::OnExpire {
        match self.on_expire.map(RawValue::get) {
            Some("\"drop\"") => crate::expiry::OnExpire::Drop,
            _ => crate::expiry::OnExpire::Dead,
        }
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

    /// The arguments as the job sees them: [`PayloadDocument::args`], or for a payload stored
    /// packed ([`super::packed`]), its arguments decoded, up to `max` bytes.
    pub fn args_unpacked(&self, max: usize) -> Result<Cow<'a, RawValue>, super::packed::PackError> {
        match self.packed {
            None => Ok(Cow::Borrowed(self.args)),
            Some(packed) => super::packed::unpack_text(packed.get(), max).map(Cow::Owned),
        }
    }

    /// The `packed` field's JSON text, if the payload has one ([`super::packed`],
    /// [`super::aside`]).
    pub fn packed_text(&self) -> Option<&'a str> {
        self.packed.map(RawValue::get)
    }

    /// Whether the arguments are stored packed ([`super::packed`]).
    pub fn is_packed(&self) -> bool {
        self.packed.is_some()
    }

    /// Failed attempts so far: an integer or a float; 0 if absent or not a number.
    pub fn attempt(&self) -> u32 {
        self.attempt
            .and_then(|raw| super::lenient::number_text_as_u64(raw.get()))
            .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// `created_at` in ms since the epoch (an integer or a float); `None` if absent or not a
    /// number.
    pub fn created_at_ms(&self) -> Option<u64> {
        super::lenient::number_text_as_u64(self.created_at?.get())
    }

    /// `enqueued_at` in ms since the epoch, read as `created_at` is.
    pub fn enqueued_at_ms(&self) -> Option<u64> {
        super::lenient::number_text_as_u64(self.enqueued_at?.get())
    }

    /// The job's time windows (its `flow` object's `windows` and `tz`), if it has any that
    /// parse; windows that do not parse are ignored (the job runs at any time), as dispatch
    /// refuses them.
    pub fn windows(&self) -> Option<crate::flow::Windows> {
        let flow: crate::flow::FlowOptions = serde_json::from_str(self.flow?.get()).ok()?;
        flow.parsed_windows().ok().flatten()
    }

    /// The job's headers ([`crate::payload::Payload::headers`]): its `headers` object's string
    /// values. A value of another type (written by another language's producer) is left out,
    /// and so is a `headers` field that is not an object: headers are metadata, and a job runs
    /// without them.
    pub fn headers(&self) -> crate::payload::Headers {
        let Some(raw) = self.headers else {
            return crate::payload::Headers::new();
        };
        let Ok(fields) = serde_json::from_str::<
            std::collections::BTreeMap<String, serde_json::Value>,
        >(raw.get()) else {
            return crate::payload::Headers::new();
        };
        fields
            .into_iter()
            .filter_map(|(name, value)| match value {
                serde_json::Value::String(value) => Some((name, value)),
                _ => None,
            })
            .collect()
    }

    /// The chain link of a chain step; `None` if absent or not a link.
    pub fn chain(&self) -> Option<ChainLink> {
        serde_json::from_str(self.chain?.get()).ok()
    }

    /// The workflow link of a workflow step; `None` if absent or not a link.
    pub fn workflow(&self) -> Option<crate::payload::WorkflowLink> {
        serde_json::from_str(self.workflow?.get()).ok()
    }

    /// The reply a handler job was pushed with (`ctx.await_reply_then`), as JSON text.
    pub fn reply(&self) -> Option<&str> {
        self.reply.map(RawValue::get)
    }

    /// Why this attempt's wait for a reply failed (it timed out), if the job came back to its
    /// queue for that: its worker records the failure instead of running it. Marked with the
    /// attempt it belongs to, so the retry that follows runs.
    pub fn reply_failure(&self) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Marker {
            attempt: u32,
            error: String,
        }
        let marker: Marker = serde_json::from_str(self.reply_failed?.get()).ok()?;
        (marker.attempt == self.attempt()).then_some(marker.error)
    }

    /// The payload with `changes` applied (field name, new value as JSON text): changed fields
    /// keep their place, new ones go at the end, and every other field is copied as it came.
    pub fn rewrite(&self, changes: &[(&str, String)]) -> String {
        // The text parsed as an object already, so it parses as one here too.
        let Ok(Fields(fields)) = serde_json::from_str::<Fields<'_>>(self.text) else {
            return self.text.to_owned();
        };
        let mut out = String::with_capacity(
            self.text.len()
                + changes
                    .iter()
                    .map(|(k, v)| k.len() + v.len() + 4)
                    .sum::<usize>(),
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
        for (key, value) in &fields {
            match changes.iter().find(|(name, _)| name == key) {
                Some((_, changed)) => push(&mut out, key, changed),
                None => push(&mut out, key, value.get()),
            }
        }
        for (name, value) in changes {
            if find(&fields, name).is_none() {
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
#[path = "document_tests.rs"]
mod tests;
