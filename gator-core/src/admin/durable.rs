//! What a durable job has saved, as an operator reads it ([`DurableState`]): its checkpoint,
//! its steps with their results in order, its sleeps slept and slices yielded, read from the
//! payload's `durable` field wherever the payload is; and the payload of a running job, read
//! from its process's in-flight list ([`Admin::running_payload`]); and which entries of a
//! scheduled set are suspended durable jobs, and why ([`Admin::suspensions`]).
//!
//! A checkpoint may be 64 KiB and a job's step results 256 KiB, and a hostile payload may hold
//! anything: a listing shows each value cut to a preview ([`super::preview`]), the number of
//! steps listed is bounded, and a caller that asks gets the values whole.

use super::Admin;
use super::preview;
use crate::context::durable::{MAX_STEP_NAME, MAX_STEPS, Saved};
use crate::error::Result;
use crate::payload::PayloadDocument;
use crate::store::processes as store_processes;
use crate::store::sets::SetEntry;
use crate::store::status::{self, JobStatus};
use serde::Serialize;
use serde_json::Value;

/// A durable job's saved state, as `job show` and the HTTP API show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DurableState {
    /// Its last checkpoint (`ctx.checkpoint`), or `null` if it saved none.
    pub checkpoint: Value,
    /// The checkpoint's size as stored (JSON text), in bytes.
    pub checkpoint_bytes: usize,
    /// Each step that succeeded, with its result, in the order they did (at most
    /// [`MAX_STEPS`] listed).
    pub steps: Vec<StepShown>,
    /// How many steps the payload holds (more than listed only in a payload no worker wrote).
    pub steps_total: usize,
    /// How many of its sleeps it has slept.
    pub sleeps: u32,
    /// How many times it yielded its slice.
    pub slices: u32,
    /// Whether a value (the checkpoint, a step's result) is shown cut to a preview.
    pub cut: bool,
    /// Why the field does not read as a durable state, if it does not (the worker fails such
    /// a job rather than repeat its steps).
    pub unreadable: Option<String>,
}

/// One step that succeeded, as shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepShown {
    /// Its name (cut to [`MAX_STEP_NAME`] bytes: a worker writes no longer one).
    pub name: String,
    /// What it returned.
    pub value: Value,
    /// Its result's size as stored (JSON text), in bytes.
    pub bytes: usize,
}

impl DurableState {
    /// The state in `payload`'s `durable` field, each value cut to `preview` bytes of JSON
    /// text (`None`: whole); `None` if the payload has no such field (or is not a payload).
    pub fn of_payload(payload: &str, preview: Option<usize>) -> Option<DurableState> {
        let doc = PayloadDocument::parse(payload.as_bytes()).ok()?;
        let field = doc.durable()?;
        let saved = match Saved::parse(Some(field)) {
            Ok(saved) => saved,
            Err(e) => {
                return Some(DurableState {
                    unreadable: Some(preview::error(&e)),
                    ..DurableState::default()
                });
            }
        };
        let mut state = DurableState {
            steps_total: saved.steps.len(),
            sleeps: saved.sleeps,
            slices: saved.slices,
            ..DurableState::default()
        };
        let mut shown = |raw: &str| {
            let value: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
            let value = match preview {
                Some(max) => preview::args_within(value, max),
                None => value,
            };
            state.cut |= preview::is_cut(&value);
            value
        };
        let checkpoint = saved.checkpoint.as_ref().map(|c| c.get());
        let checkpoint_value = checkpoint.map_or(Value::Null, &mut shown);
        let steps: Vec<StepShown> = saved
            .steps
            .iter()
            .take(MAX_STEPS)
            .map(|step| StepShown {
                name: gator_rules::cut(&step.name, MAX_STEP_NAME).into_owned(),
                value: shown(step.value.get()),
                bytes: step.value.get().len(),
            })
            .collect();
        state.checkpoint = checkpoint_value;
        state.checkpoint_bytes = checkpoint.map_or(0, str::len);
        state.steps = steps;
        Some(state)
    }
}

impl Admin {
    /// The payload of job `jid` as it is in `process`'s in-flight list of `queue` (what a
    /// running job has saved so far is in it), if it is there: one `LRANGE` of a list that
    /// holds that process's jobs of the queue, at most its concurrency and prefetch.
    pub async fn running_payload(
        &self,
        queue: &str,
        process: &str,
        jid: &str,
    ) -> Result<Option<String>> {
        let (keys, mut conn) = (self.keys(), self.connection());
        let lists = store_processes::in_flight(&mut conn, keys, process, &[queue]).await?;
        Ok(lists
            .into_iter()
            .flatten()
            .find(|raw| PayloadDocument::parse(raw.as_bytes()).is_ok_and(|doc| doc.jid() == jid)))
    }
}

impl Admin {
    /// Why each of `entries` (of a scheduled set) is suspended, if it is (`sleep 2`, `slice
    /// 3`): read from the status records of the entries whose payload holds a `durable` field,
    /// in one pipeline; an entry of any other job costs nothing. `None` for an entry that is
    /// not suspended.
    pub async fn suspensions(&self, entries: &[SetEntry]) -> Result<Vec<Option<String>>> {
        let durable: Vec<(usize, (String, String))> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, entry)| {
                let doc = PayloadDocument::parse(entry.raw.as_bytes()).ok()?;
                doc.durable()?;
                Some((i, (entry.queue.clone(), doc.jid().to_owned())))
            })
            .collect();
        let mut reasons = vec![None; entries.len()];
        if durable.is_empty() {
            return Ok(reasons);
        }
        let wanted: Vec<(String, String)> = durable.iter().map(|(_, job)| job.clone()).collect();
        let records = status::read_many(&mut self.connection(), self.keys(), &wanted).await?;
        for ((i, _), record) in durable.iter().zip(records) {
            if let Some(JobStatus::Suspended { reason, .. }) = record.map(|r| r.status) {
                reasons[*i] = Some(preview::error(&reason)); // free text: bounded
            }
        }
        Ok(reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payloads_durable_field_is_shown_in_order_and_cut_to_its_preview() {
        let big = "x".repeat(5000);
        let payload = format!(
            r#"{{"jid":"j1","job":"import","args":[],"queue":"q","created_at":1,"enqueued_at":1,"durable":{{"cp":{{"row":7}},"steps":[{{"name":"charge","value":"ch_1"}},{{"name":"mail","value":"{big}"}}],"sleeps":2,"slices":1}}}}"#
        );
        let state = DurableState::of_payload(&payload, Some(1024)).unwrap();
        assert_eq!(state.checkpoint, serde_json::json!({"row": 7}));
        assert_eq!(state.checkpoint_bytes, 9);
        let names: Vec<_> = state.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["charge", "mail"]);
        assert_eq!(state.steps[0].value, "ch_1");
        assert!(preview::is_cut(&state.steps[1].value));
        assert_eq!(state.steps[1].bytes, 5002);
        assert_eq!((state.sleeps, state.slices, state.cut), (2, 1, true));
        let whole = DurableState::of_payload(&payload, None).unwrap();
        assert_eq!(whole.steps[1].value, Value::String(big));
        assert!(!whole.cut);
    }

    #[test]
    fn a_payload_without_the_field_has_no_state_and_a_bad_one_says_why() {
        let plain =
            r#"{"jid":"j1","job":"a","args":[],"queue":"q","created_at":1,"enqueued_at":1}"#;
        assert_eq!(DurableState::of_payload(plain, Some(1024)), None);
        let bad = r#"{"jid":"j1","job":"a","args":[],"queue":"q","created_at":1,"enqueued_at":1,"durable":"x"}"#;
        let state = DurableState::of_payload(bad, Some(1024)).unwrap();
        assert!(state.unreadable.unwrap().contains("unreadable"));
    }
}
