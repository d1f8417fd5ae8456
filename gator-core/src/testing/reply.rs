//! Durable jobs waiting for a reply (`ctx.wait_for_reply`) in fake mode: parked until
//! [`Fake::reply`] saves the reply in their payload (they are due at once and run on from
//! their wait), or until their timeout on the fake clock (their attempt fails, under their
//! retry policy), as on Redis.

use super::journeys::Link;
use super::record::Recorded;
use super::run::Failure;
use super::{Drained, Fake, Mode, lock};
use crate::context::AwaitReply;
use crate::failure::JobError;
use crate::horizon::SCHEDULE_HORIZON;
use crate::payload::PayloadDocument;
use crate::wire::durable::Saved;
use serde::Serialize;
use serde_json::value::RawValue;

impl Fake {
    /// Replies `reply` to `key`, as `Client::reply` does on Redis, to the durable jobs recorded
    /// waiting for it ([`crate::Context::wait_for_reply`]): each is due at once, with the
    /// reply saved as the result of its step `reply:<key>`, so the next [`Fake::drain`] runs
    /// it on from its wait. Returns how many were waiting: 0 if none (the fake keeps no reply
    /// for a job that waits later).
    ///
    /// # Panics
    ///
    /// If `reply` does not serialize to JSON.
    #[track_caller]
    pub fn reply<T: Serialize + ?Sized>(&self, key: &str, reply: &T) -> usize {
        let json = serde_json::to_string(reply)
            .unwrap_or_else(|e| panic!("the reply to {key:?} does not serialize: {e}"));
        let now = self.mode.now();
        let mut recorded = lock(&self.mode.recorded);
        let mut replied = 0;
        for job in recorded
            .iter_mut()
            .filter(|job| job.waiting.as_deref() == Some(key))
        {
            job.job.due = Some(now);
            replied += 1;
            // A reply past the job's bounds fails the wait, as its timeout does (it stays
            // waiting, due now).
            if let Some(payload) = with_reply(&job.payload_text(), key, &json) {
                job.payload = Some(payload);
                job.waiting = None;
                job.job.suspended = None;
            }
        }
        replied
    }
}

/// Parks `job` (a step `link` says), whose run waits for the reply `wait` asks for, with the
/// payload its saves left: due at its timeout on the mode's clock, listed in
/// [`Drained::suspended`] (`reply <key>`).
pub(super) fn park(
    mode: &Mode,
    mut job: Recorded,
    link: Option<Link>,
    (payload, wait): (Option<String>, AwaitReply),
    drained: &mut Drained,
) {
    let reason = format!("reply {}", wait.key);
    drained.suspended.push((job.job.clone(), reason.clone()));
    if let Some(link) = link {
        lock(&mode.links).insert(job.job.jid.clone(), link);
    }
    let now = mode.now();
    job.payload = payload;
    job.job.due = Some(
        now.checked_add(wait.timeout)
            .unwrap_or(now + SCHEDULE_HORIZON),
    );
    job.job.suspended = Some(reason);
    job.waiting = Some(wait.key);
    mode.record(job);
}

/// For a job due while it still waits for its reply (its timeout came): its wait ends, and
/// the failure its attempt ends with.
pub(super) fn timed_out(job: &mut Recorded) -> Option<Failure> {
    let key = job.waiting.take()?;
    job.job.suspended = None;
    Some(Failure::Run(JobError::new(format!(
        "no reply to {key:?} in time"
    ))))
}

/// `text` with `json` saved as the result of its step `reply:<key>`; `None` if it cannot be.
fn with_reply(text: &str, key: &str, json: &str) -> Option<String> {
    let doc = PayloadDocument::parse(text.as_bytes()).ok()?;
    let value = RawValue::from_string(json.to_owned()).ok()?;
    let saved = Saved::parse(doc.durable()).ok()?;
    let saved = saved.with_step(&format!("reply:{key}"), value).ok()?;
    Some(doc.rewrite(&[("durable", saved.to_json())]))
}
