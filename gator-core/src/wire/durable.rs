//! Durable jobs on the wire (`context::durable` runs them, `store::durable` writes them): what a
//! job has saved, as its payload carries it in the `durable` field ([`Saved`]: its last
//! checkpoint, its steps' results in the order they succeeded, how many sleeps it has slept,
//! how many times it yielded its slice) and its bounds, checked before a write (a job past
//! one fails with the bound in its error); whether a save found its job; and when a suspended
//! job wakes.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::time::{Duration, SystemTime};

/// What a save of a running job's state found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// The state is saved: the payload in flight is the new one.
    Saved,
    /// The job is no longer in flight in this process (its lease lapsed, and recovery put it
    /// back): nothing was written, and this run must stop.
    Lost,
}

/// When a suspended job runs again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// This long after the suspension is written (on Redis's clock).
    In(Duration),
    /// At this time.
    At(SystemTime),
}

/// The most bytes of one checkpoint's JSON.
pub const MAX_CHECKPOINT_BYTES: usize = 64 * 1024;

/// The most steps one job saves the results of.
pub const MAX_STEPS: usize = 100;

/// The most bytes of all of one job's saved step results together.
pub const MAX_STEPS_BYTES: usize = 256 * 1024;

/// The most bytes of a step's name.
pub const MAX_STEP_NAME: usize = 128;

/// The most sleeps one job sleeps (each is recorded in its payload).
pub const MAX_SLEEPS: u32 = 10_000;

/// The `durable` field of a payload.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Saved {
    /// The last checkpoint (`Context::checkpoint`), as JSON.
    #[serde(default, rename = "cp", skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Box<RawValue>>,
    /// Each step that succeeded, with its result, in the order they did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepResult>,
    /// How many of its sleeps (`Context::sleep`, in the order they are called) it has slept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sleeps: u32,
    /// How many times it yielded its slice and went back to its queue.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub slices: u32,
}

/// One step that succeeded: its name and what it returned (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepResult {
    /// The step's name.
    pub name: String,
    /// What its closure returned.
    pub value: Box<RawValue>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Saved {
    /// The state in a payload's `durable` field (`text`), or an empty one if there is none. A
    /// field this version cannot read is an error: running on without it would repeat steps.
    pub fn parse(text: Option<&str>) -> Result<Saved, String> {
        match text {
            None => Ok(Saved::default()),
            // serde would read a struct from a JSON array, by position.
            Some(text) if !text.trim_start().starts_with('{') => {
                Err("the job's saved durable state is unreadable: not a JSON object".to_owned())
            }
            Some(text) => serde_json::from_str(text)
                .map_err(|e| format!("the job's saved durable state is unreadable: {e}")),
        }
    }

    /// The stored result of step `name`, if it succeeded before.
    pub fn step(&self, name: &str) -> Option<&RawValue> {
        self.steps
            .iter()
            .find(|step| step.name == name)
            .map(|step| &*step.value)
    }

    /// This state with `value` as its checkpoint, or why it is too large.
    pub fn with_checkpoint(&self, value: Box<RawValue>) -> Result<Saved, String> {
        if value.get().len() > MAX_CHECKPOINT_BYTES {
            return Err(format!(
                "a checkpoint of {} bytes is larger than the {MAX_CHECKPOINT_BYTES} allowed",
                value.get().len()
            ));
        }
        let mut next = self.clone();
        next.checkpoint = Some(value);
        Ok(next)
    }

    /// This state with step `name`'s result `value` added, or why it does not fit.
    pub fn with_step(&self, name: &str, value: Box<RawValue>) -> Result<Saved, String> {
        check_step_name(name)?;
        if self.steps.len() >= MAX_STEPS {
            return Err(format!(
                "step {name:?} is one more than the {MAX_STEPS} steps a job may save"
            ));
        }
        let bytes: usize = self.steps.iter().map(|s| s.value.get().len()).sum();
        if bytes + value.get().len() > MAX_STEPS_BYTES {
            return Err(format!(
                "step {name:?}'s result ({} bytes) would take the job's saved results past {MAX_STEPS_BYTES} bytes",
                value.get().len()
            ));
        }
        let mut next = self.clone();
        next.steps.push(StepResult {
            name: name.to_owned(),
            value,
        });
        Ok(next)
    }

    /// This state as the JSON of a payload's `durable` field.
    pub fn to_json(&self) -> String {
        // Only strings, counts and JSON text already checked: it always serializes.
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

/// Whether `name` may name a step: 1 to [`MAX_STEP_NAME`] bytes, no control characters.
pub fn check_step_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_STEP_NAME || name.chars().any(char::is_control) {
        return Err(format!(
            "a step's name must be 1 to {MAX_STEP_NAME} bytes without control characters: {:?}",
            gator_rules::cut(name, 80)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn a_saved_state_reads_back_its_checkpoint_and_steps() {
        let saved = Saved::default()
            .with_checkpoint(raw("{\"row\":7}"))
            .unwrap()
            .with_step("charge", raw("\"ch_1\""))
            .unwrap();
        let again = Saved::parse(Some(&saved.to_json())).unwrap();
        assert_eq!(again.checkpoint.as_ref().unwrap().get(), "{\"row\":7}");
        assert_eq!(again.step("charge").unwrap().get(), "\"ch_1\"");
        assert!(again.step("email").is_none());
        assert_eq!(Saved::default().to_json(), "{}");
    }

    #[test]
    fn a_state_past_its_bounds_is_refused_with_the_bound() {
        let big = format!("\"{}\"", "x".repeat(MAX_CHECKPOINT_BYTES));
        let error = Saved::default().with_checkpoint(raw(&big)).unwrap_err();
        assert!(error.contains("larger than"), "{error}");
        let mut saved = Saved::default();
        for i in 0..MAX_STEPS {
            saved = saved.with_step(&format!("s{i}"), raw("1")).unwrap();
        }
        assert!(saved.with_step("one more", raw("1")).is_err());
        assert!(Saved::default().with_step("", raw("1")).is_err());
        assert!(Saved::default().with_step("a\nb", raw("1")).is_err());
        let half = format!("\"{}\"", "y".repeat(MAX_STEPS_BYTES / 2));
        let two = Saved::default().with_step("a", raw(&half)).unwrap();
        assert!(two.with_step("b", raw(&half)).is_err());
    }

    #[test]
    fn an_unreadable_state_is_an_error_not_a_fresh_start() {
        assert!(Saved::parse(Some("[1,2]")).is_err());
        assert!(Saved::parse(Some("[1]")).is_err(), "not read by position");
        assert!(Saved::parse(None).unwrap().steps.is_empty());
    }
}
