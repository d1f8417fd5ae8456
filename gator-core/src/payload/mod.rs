//! The wire format: the JSON document stored in Redis for each job.
//!
//! Any language can produce one (see `docs/wire-format.md`): a Python or Node producer that
//! RPUSHes this JSON to `gator:{<queue>}:queue` and SADDs the queue to `gator:queues` gets its
//! job run by a Rust worker.

pub mod aside;
mod document;
pub mod envelope;
mod lenient;
pub mod limit;
pub mod packed;

pub use document::{DocumentError, PayloadDocument};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A job's headers (see [`Payload::headers`]): names to string values, in name order.
pub type Headers = BTreeMap<String, String>;

/// One job as stored in Redis. Unknown fields are kept (in `extra`) and written back, so a
/// newer producer's fields survive a retry by an older worker.
///
/// The options most jobs lack (chain, workflow, flow, unique) are boxed: a plain job's
/// `Payload` is then 304 bytes instead of 632, which a batch of 1,000 moves several times on
/// its way to Redis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Payload {
    /// Unique, time-sortable job id: a UUIDv7 in its hyphenated text form.
    pub jid: String,
    /// The job's wire name: what `#[job]` registered, `name = "..."` or the fn name.
    pub job: String,
    /// The job's arguments as a JSON array, one element per parameter of the job fn.
    pub args: Value,
    /// The queue the job belongs to.
    pub queue: String,
    /// When the job was first dispatched, in ms since the Unix epoch. Read as an integer or a
    /// float (what `time.time() * 1000` gives in Python).
    #[serde(deserialize_with = "lenient::ms")]
    pub created_at: u64,
    /// When the job was last put on its queue's list, in ms since the Unix epoch.
    #[serde(deserialize_with = "lenient::ms")]
    pub enqueued_at: u64,
    /// How many attempts have failed so far (0 for a fresh job); the running attempt is this + 1.
    /// Not written while 0: the field is optional on the wire, and 12 bytes of every waiting
    /// job's payload are 7 % of what Redis keeps for it.
    #[serde(
        default,
        skip_serializing_if = "first_attempt",
        deserialize_with = "lenient::count"
    )]
    pub attempt: u32,
    /// The reason of the last failure, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the last failure happened, in ms since the Unix epoch.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::optional_ms"
    )]
    pub failed_at: Option<u64>,
    /// When the last failed retry (an attempt after the first) started, in ms since the epoch.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::optional_ms"
    )]
    pub retried_at: Option<u64>,
    /// For a step of a chain: where the rest of the chain waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Box<ChainLink>>,
    /// For a step of a workflow: its workflow and the steps whose results it may read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<Box<WorkflowLink>>,
    /// The job's flow options (priority, cost, limit key, ...: see [`crate::flow`]); absent for
    /// a job without any, which a plain queue keeps on its list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Box<crate::flow::FlowOptions>>,
    /// Headers: string metadata that travels with the job from its dispatch to its run
    /// (a tenant id, a W3C `traceparent`), set by client middleware
    /// (`middleware::DispatchMiddleware`) and read by server middleware and the job's
    /// `Context::header`. Absent when empty.
    #[serde(default, skip_serializing_if = "Headers::is_empty")]
    pub headers: Headers,
    /// For a unique job: its key, when its lock is released, its TTL and debounce delay (see
    /// [`crate::unique`]); absent for any other job, which takes no lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique: Option<Box<crate::unique::Unique>>,
    /// For an expiring job ([`crate::expiry`]): the time, in ms since the epoch on Redis's
    /// clock, after which it must not start. Absent for a job without a deadline.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::optional_ms"
    )]
    pub expires_at: Option<u64>,
    /// `"drop"` for an expiring job that is not kept in the dead set once expired; absent (or
    /// `"dead"`) to keep it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_expire: Option<crate::expiry::OnExpire>,
    /// Fields this version of Gator does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// For a payload whose arguments were stored compressed ([`packed`]): their sizes. Not a
    /// field of its own on the wire: the `packed` field is, which [`Payload::from_json`]
    /// decodes into `args`.
    #[serde(skip)]
    pub packing: Option<packed::Packing>,
    /// Whether the client chose to store the arguments aside, in a key of their own
    /// ([`aside`]): the store paths that can write that key in the same step as the job do
    /// (`crate::store::queue::enqueue`); every other writes the payload whole, as
    /// [`Payload::to_json`] does. Not a field on the wire.
    #[serde(skip)]
    pub aside: bool,
}

impl Payload {
    /// A fresh payload for `job` with already-serialized `args`, stamped now with a new jid.
    pub fn new(job: &str, queue: &str, args: Value) -> Payload {
        let now = now_ms();
        Payload {
            jid: new_jid(),
            job: job.to_owned(),
            args,
            queue: queue.to_owned(),
            created_at: now,
            enqueued_at: now,
            attempt: 0,
            error: None,
            failed_at: None,
            retried_at: None,
            chain: None,
            workflow: None,
            flow: None,
            headers: Headers::new(),
            unique: None,
            expires_at: None,
            on_expire: None,
            extra: Map::new(),
            packing: None,
            aside: false,
        }
    }

    /// Parses a payload as read from Redis, with packed arguments decoded into `args` (up to
    /// [`packed::decode_limit`] bytes).
    pub fn from_json(raw: &str) -> serde_json::Result<Payload> {
        let mut payload: Payload = serde_json::from_str(raw)?;
        if payload.extra.contains_key(packed::FIELD) {
            packed::unpack_payload(&mut payload, packed::decode_limit())
                .map_err(<serde_json::Error as serde::de::Error>::custom)?;
        }
        Ok(payload)
    }

    /// For a dead entry a worker wrote around a payload too deep to parse
    /// ([`envelope::TooDeep`]): that payload's text as it came (its `raw` field), which is what
    /// goes back to the queue if the job is retried. `None` for any other payload; the text
    /// must name this entry's jid, so a producer's own field called `raw` is never taken for it.
    pub fn unread_text(&self) -> Option<&str> {
        let raw = self.extra.get("raw")?.as_str()?;
        let deep = envelope::too_deep(raw)?;
        (deep.jid.as_deref() == Some(self.jid.as_str())).then_some(raw)
    }

    /// The JSON text stored in Redis. A payload read packed is written packed again.
    pub fn to_json(&self) -> String {
        if self.packing.is_some_and(|p| p.aside) && !self.args.is_null() {
            // Read aside and its arguments loaded for a reader: the marker is written back,
            // and the arguments stay in their key.
            let mut again = self.clone();
            again.args = Value::Null;
            return serde_json::to_string(&again).expect("a Payload always serializes");
        }
        if self.packing.is_some() && !self.extra.contains_key(packed::FIELD) {
            let mut again = self.clone();
            again.packing = None;
            packed::pack(&mut again);
            return serde_json::to_string(&again).expect("a Payload always serializes");
        }
        // Serializing a struct of strings, numbers and `Value`s into a String cannot fail.
        serde_json::to_string(self).expect("a Payload always serializes")
    }
}

/// Whether no attempt has failed yet: the `attempt` field is left out (it reads back as 0).
fn first_attempt(attempt: &u32) -> bool {
    *attempt == 0
}

/// What a chain step knows of its chain: enough to enqueue the next step when it succeeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainLink {
    /// The chain's id (a UUIDv7, like a jid).
    pub id: String,
    /// The queue whose hash tag the chain's list lives under (the first step's queue).
    pub list_queue: String,
    /// The jid of the step after this one; `None` for the last step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_jid: Option<String>,
    /// The queue of the step after this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_queue: Option<String>,
}

/// What a workflow step knows of its workflow (see `workflow`): where the workflow's
/// state lives, so that the step's success or death is reported there, and its parents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowLink {
    /// The workflow's id, `<uuid>@<home queue>`.
    pub id: String,
    /// The jids of the steps this one ran after, whose results it can read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<String>,
}

impl WorkflowLink {
    /// The queue whose hash tag holds the workflow's state: the part of its id after the `@`.
    pub fn home(&self) -> Option<&str> {
        home_of(&self.id)
    }
}

pub use crate::wire::jid::new_jid;

/// The home queue of workflow `id` (`<uuid>@<home>`): the part after the `@`.
pub fn home_of(id: &str) -> Option<&str> {
    id.split_once('@').map(|(_, home)| home)
}

pub use crate::clock::{now_ms, to_ms};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn payload_round_trips_and_keeps_unknown_fields() {
        let raw = r#"{"jid":"j1","job":"send_email","args":["a@b.c",3],"queue":"default",
            "created_at":1,"enqueued_at":2,"attempt":0,"trace_id":"abc"}"#;
        let p = Payload::from_json(raw).expect("valid payload");
        assert_eq!(p.args, json!(["a@b.c", 3]));
        assert_eq!(p.extra.get("trace_id"), Some(&json!("abc")));
        let again = Payload::from_json(&p.to_json()).expect("round trip");
        assert_eq!(again, p);
    }

    #[test]
    fn attempt_defaults_to_zero_for_hand_written_payloads() {
        let raw = r#"{"jid":"j","job":"x","args":[],"queue":"q","created_at":1,"enqueued_at":1}"#;
        assert_eq!(Payload::from_json(raw).expect("valid").attempt, 0);
    }

    #[test]
    fn a_fresh_job_leaves_attempt_out_and_a_retried_one_writes_it() {
        let mut p = Payload::new("x", "q", json!([]));
        assert!(!p.to_json().contains("\"attempt\""), "{}", p.to_json());
        p.attempt = 2;
        let text = p.to_json();
        assert!(text.contains(r#""attempt":2"#), "{text}");
        assert_eq!(Payload::from_json(&text).expect("valid").attempt, 2);
    }

    #[test]
    fn timestamps_and_attempts_may_be_floats_as_other_languages_write_them() {
        let raw = r#"{"jid":"j","job":"x","args":[],"queue":"q","created_at":1732300000000.25,
            "enqueued_at":1.7323e12,"attempt":2.0,"failed_at":5.5}"#;
        let p = Payload::from_json(raw).expect("floats are read");
        assert_eq!(p.created_at, 1_732_300_000_000);
        assert_eq!(p.enqueued_at, 1_732_300_000_000);
        assert_eq!(p.attempt, 2);
        assert_eq!(p.failed_at, Some(5));
    }

    #[test]
    fn jids_are_unique_and_sort_by_time() {
        let a = new_jid();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_jid();
        assert_ne!(a, b);
        assert!(a < b, "{a} should sort before {b}");
    }
}
