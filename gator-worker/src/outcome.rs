//! What happens to a job after its attempt: done, another attempt later, or the dead set. A
//! failure is recorded in the payload as it came ([`PayloadDocument::rewrite`]), and text
//! that is not a payload at all is kept verbatim in a dead-set entry of its own.

use crate::clock::RedisClock;
use crate::door::{Done, Fetched};
use base64::Engine;
use gator_core::JobError;
use gator_core::client::SCHEDULE_HORIZON;
use gator_core::payload::{DocumentError, Payload, PayloadDocument};
use gator_core::retry::{RetryContext, RetryDecision};
use std::time::{Duration, Instant};
use tracing::{error, warn};

/// What happens to a job after its attempt.
#[derive(Debug)]
pub enum Outcome {
    /// It succeeded; if it is a chain or workflow step, its chain or workflow moves on.
    Done {
        /// The outbox record of a chain step with a next step, or of a workflow step
        /// (`settle::handoff_on_success`).
        handoff: Option<String>,
        /// What it returned, as JSON, kept in its status record.
        result: Option<String>,
        /// The attempts it took (1 if the first run succeeded).
        attempts: u32,
        /// When it finished (the worker's estimate of Redis time, ms).
        at_ms: u64,
        /// Whether it is a unique job whose lock lasts until its success
        /// (`gator_core::unique`): its success is settled by a script that releases the lock.
        unique_lock: bool,
        /// Whether its attempt wrote a `running` record in its key (a job with a deadline as it
        /// is judged in time, any job once it has run `MARK_RUNNING_AFTER`), which its success
        /// must delete ([`Done::keyed`]).
        keyed: bool,
    },
    /// It failed and runs again `delay` from now (on Redis's clock); the payload records the
    /// failure.
    Retry {
        /// The payload with the failure recorded.
        payload: String,
        /// How long until the next attempt.
        delay: Duration,
    },
    /// It may not start yet (outside its time windows): it goes back, unchanged and without
    /// counting an attempt, to its queue's scheduled set, due `delay` from now.
    Reschedule {
        /// How long until its next window opens.
        delay: Duration,
    },
    /// A durable job slept or yielded its slice (`gator_core::context::durable`): it is
    /// parked as `payload` (what it saved, the sleep recorded) in its queue's scheduled set
    /// until `wake`, recorded `suspended`, its attempt not counted (`suspend.lua`).
    Suspend {
        /// The payload to park.
        payload: String,
        /// When it runs again.
        wake: gator_core::context::durable::Wake,
        /// Why (`sleep 2`, `slice 3`).
        reason: String,
    },
    /// This worker does not run it, and another live worker runs it from its queue (the job
    /// catalogue says): it goes back to the head of its queue at once, unrun and unchanged,
    /// for that worker (`release.lua`), and this worker passes over it from now on.
    HandBack,
    /// It stopped because its worker is shutting down (its context was cancelled by the
    /// shutdown, or it said [`JobError::interrupted`] while the worker stops): not a failure.
    /// It stays in flight, and the stopping worker puts it back at the head of its queue
    /// unchanged, its attempt not counted (or, should the process die first, recovery does).
    Interrupted,
    /// It returned having asked to wait for a reply: it leaves its queue waiting for it.
    AwaitReply {
        /// Its wait record (`door::WaitRecord`, JSON).
        record: String,
        /// The correlation key.
        key: String,
        /// How long it waits.
        timeout: Duration,
        /// A durable job's wait (`ctx.wait_for_reply`): it resumes with the reply.
        resume: bool,
    },
    /// Its cancellation was asked for (`Client::cancel`): recorded cancelled, never retried.
    Cancelled {
        /// Its jid.
        jid: String,
        /// A workflow step's report of its end.
        handoff: Option<String>,
    },
    /// Its retry strategy discarded it: recorded `discarded`, not kept in the dead set.
    Discard {
        /// Its jid.
        jid: String,
        /// Its record's tail: `<attempts> <error>`.
        tail: String,
        /// A workflow step's report of its end (as a death).
        handoff: Option<String>,
    },
    /// It was not started by its deadline (`gator_core::expiry`): never run, and already
    /// settled by the script that judged it (`Settler::judge`), kept in the dead set
    /// or dropped; what is left is carrying a workflow step's end on, as a death's.
    Expired {
        /// Whether it was still in flight when judged (and is now settled).
        settled: bool,
        /// A workflow step's report of its end (as a death).
        handoff: Option<String>,
        /// Chains whose dead step the dead set's trim removed (see `door::Killed`).
        orphaned_chains: Vec<(String, String)>,
    },
    /// It will not run again: exhausted retries, bad input, or an unreadable payload.
    Dead {
        /// The dead-set entry.
        entry: String,
    },
}

impl Outcome {
    /// What a success records with its settle (`None` for any other outcome), its record
    /// kept for `retention`.
    pub fn done(&self, retention: Duration) -> Option<Done<'_>> {
        match self {
            Outcome::Done {
                result,
                attempts,
                at_ms,
                keyed,
                ..
            } => Some(Done {
                result: result.as_deref(),
                attempts: *attempts,
                at_ms: *at_ms,
                retention,
                keyed: *keyed,
            }),
            _ => None,
        }
    }
}

/// A job's retry policy, from its `#[job]` options (or the defaults for an unknown job).
#[derive(Clone, Copy)]
pub struct Policy {
    /// Retries after the first attempt.
    pub retries: u32,
    /// The delay before the next attempt after a number of failures.
    pub backoff: fn(u32) -> Duration,
    /// The job's retry strategy (`retry = ...`), which overrides the two above when it decides.
    pub strategy: Strategy,
}

pub use gator_core::retry::Strategy;

/// No strategy: `retries` and `backoff` decide.
fn no_strategy(_: &RetryContext<'_>) -> Option<RetryDecision> {
    None
}

impl Policy {
    /// Gator's defaults: 25 retries on Sidekiq's curve.
    pub const DEFAULT: Policy = Policy {
        retries: gator_core::retry::DEFAULT_RETRIES,
        backoff: gator_core::retry::default_backoff,
        strategy: no_strategy,
    };
}

impl Policy {
    /// The policy a job's `#[job]` options set.
    pub fn of(registration: &gator_core::JobRegistration) -> Policy {
        Policy {
            retries: registration.retries,
            backoff: registration.backoff,
            strategy: registration.retry,
        }
    }
}

/// When an attempt started.
#[derive(Clone, Copy)]
pub struct Attempt {
    /// On this host's monotonic clock, for durations.
    pub started: Instant,
    /// On Redis's clock as this host estimates it, for the `retried_at` stamp.
    pub started_ms: u64,
}

impl Attempt {
    /// An attempt starting now.
    pub fn now(clock: &RedisClock) -> Attempt {
        Attempt {
            started: Instant::now(),
            started_ms: clock.now_ms(),
        }
    }
}

/// Why an attempt failed.
#[derive(Debug)]
pub enum Failure {
    /// The job ran and failed (an `Err`, a panic, a timeout), or could not be found.
    Run(JobError),
    /// The same bytes would fail again, whoever ran them: arguments that do not fit the job
    /// fn, a job name no worker may run, a payload over the size limit. It goes to the dead
    /// set at once, its payload kept as it came (once: not copied into `raw`), with the
    /// reason.
    Unrunnable(String),
}

/// The longest a retry waits: a custom backoff that returns more (`Duration::MAX`) waits this
/// long instead of overflowing the due time.
pub const MAX_RETRY_DELAY: Duration = SCHEDULE_HORIZON;

/// Classifies a failure: records it in the payload and decides between another attempt later
/// and the dead set.
pub fn classify(
    doc: &PayloadDocument<'_>,
    failure: Failure,
    policy: Policy,
    attempt: Attempt,
    clock: &RedisClock,
) -> Outcome {
    let (error, unrunnable) = match failure {
        Failure::Run(error) => (error, false),
        Failure::Unrunnable(reason) => (JobError::discard(reason), true),
    };
    let now = clock.now_ms();
    let failures = doc.attempt().saturating_add(1);
    let mut changes = vec![
        ("attempt", failures.to_string()),
        ("error", json_string(error.message())),
        ("failed_at", now.to_string()),
    ];
    if failures > 1 {
        changes.push(("retried_at", attempt.started_ms.to_string()));
    }
    let took = elapsed_ms(attempt.started);
    // The job's retry strategy decides first (what no worker could run always goes dead).
    // A strategy's time is its own; this host's clock only turns it into a wait.
    let failure = RetryContext {
        error: &error,
        failures,
        jid: doc.jid(),
        job: doc.job(),
    };
    let strategy = (!unrunnable).then_some(policy.strategy);
    let (decision, by_strategy) = gator_core::retry::decide(
        strategy,
        policy.retries,
        policy.backoff,
        &failure,
        std::time::SystemTime::now(),
    );
    match decision {
        RetryDecision::RetryIn(delay) => retry(doc, changes, delay, now, &error, took),
        RetryDecision::Discard => discard(doc, &error, failures, took),
        _ => dead(doc, &changes, &error, by_strategy, took),
    }
}

/// Another attempt `delay` from now (at most [`MAX_RETRY_DELAY`]), the failure recorded.
fn retry(
    doc: &PayloadDocument<'_>,
    mut changes: Vec<(&str, String)>,
    delay: Duration,
    now: u64,
    error: &JobError,
    took: f64,
) -> Outcome {
    let delay = delay.min(MAX_RETRY_DELAY);
    let delay_ms = delay.as_millis() as u64; // at most five years: fits
    changes.push(("enqueued_at", now.saturating_add(delay_ms).to_string()));
    warn!(duration_ms = took, outcome = "retry", error = %error, retry_in_ms = delay_ms, "job failed; will retry");
    Outcome::Retry {
        payload: doc.rewrite(&changes),
        delay,
    }
}

/// The dead set, the failure recorded; `decided` if the job's retry strategy gave up.
fn dead(
    doc: &PayloadDocument<'_>,
    changes: &[(&str, String)],
    error: &JobError,
    decided: bool,
    took: f64,
) -> Outcome {
    let why = if decided {
        "its retry strategy gave up"
    } else if error.is_retryable() {
        "retries exhausted"
    } else {
        "not retryable"
    };
    error!(duration_ms = took, outcome = "dead", error = %error, why, "job failed; moved to the dead set");
    Outcome::Dead {
        entry: doc.rewrite(changes),
    }
}

/// Discarded by the job's retry strategy: recorded `discarded`, not kept in the dead set.
fn discard(doc: &PayloadDocument<'_>, error: &JobError, failures: u32, took: f64) -> Outcome {
    warn!(duration_ms = took, outcome = "discarded", error = %error, "job failed; discarded by its retry strategy");
    Outcome::Discard {
        jid: doc.jid().to_owned(),
        tail: format!("{failures} {}", error.message()),
        handoff: crate::door::handoff_on_end(doc.text(), "dead", Duration::from_secs(86_400)),
    }
}

/// Bytes that are not a payload: to the dead set, kept whole. UTF-8 text is kept verbatim in
/// `raw`; other bytes in `raw_base64` (standard alphabet, with padding). A payload too deep to
/// parse (`DocumentError::TooDeep`) keeps the jid and name its envelope says, so it is listed,
/// retried (as it came) and deleted by its jid.
pub fn malformed(job: &Fetched, reason: &DocumentError, clock: &RedisClock) -> Outcome {
    // Cut: a parse error may quote a value of the payload, which may be megabytes.
    let text = gator_rules::cut(&reason.to_string(), gator_rules::MAX_ERROR_TEXT).into_owned();
    error!(queue = %job.queue, error = %gator_rules::escape(&text), "malformed payload: moved to the dead set as it was");
    let now = clock.now_ms();
    let mut entry = Payload::new("", &job.queue, serde_json::Value::Array(Vec::new()));
    if let DocumentError::TooDeep(deep) = reason {
        entry.jid = deep.jid.clone().unwrap_or(entry.jid);
        entry.job = deep.job.clone().unwrap_or_default();
    }
    entry.created_at = now;
    entry.enqueued_at = now;
    entry.error = Some(format!("malformed payload: {text}"));
    entry.failed_at = Some(now);
    let kept = match std::str::from_utf8(&job.raw) {
        Ok(text) => ("raw", text.to_owned()),
        Err(_) => (
            "raw_base64",
            base64::engine::general_purpose::STANDARD.encode(&job.raw),
        ),
    };
    entry
        .extra
        .insert(kept.0.to_owned(), serde_json::Value::String(kept.1));
    Outcome::Dead {
        entry: entry.to_json(),
    }
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// Milliseconds since `started`, to the microsecond (so logs do not show float noise).
pub fn elapsed_ms(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> Attempt {
        Attempt {
            started: Instant::now(),
            started_ms: 1_000,
        }
    }

    #[test]
    fn a_backoff_of_duration_max_waits_five_years_instead_of_overflowing() {
        let raw = br#"{"jid":"j","job":"x","args":[],"created_at":1.5e12}"#;
        let doc = PayloadDocument::parse(raw).expect("a payload");
        let policy = Policy {
            retries: 3,
            backoff: |_| Duration::MAX,
            strategy: no_strategy,
        };
        let clock = RedisClock::default();
        let failure = Failure::Run(JobError::new("boom"));
        match classify(&doc, failure, policy, attempt(), &clock) {
            Outcome::Retry { payload, delay } => {
                assert_eq!(delay, MAX_RETRY_DELAY);
                assert!(payload.contains(r#""created_at":1.5e12"#), "{payload}");
                assert!(payload.contains(r#""attempt":1"#), "{payload}");
            }
            other => panic!("expected a retry, got {other:?}"),
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_are_kept_in_base64() {
        let job = Fetched {
            queue: "q".into(),
            process: "p".into(),
            raw: vec![0xff, 0xfe, b'{'],
            admitted: false,
        };
        let reason = PayloadDocument::parse(&job.raw).expect_err("not UTF-8");
        let Outcome::Dead { entry } = malformed(&job, &reason, &RedisClock::default()) else {
            panic!("malformed payloads go to the dead set");
        };
        let entry: serde_json::Value = serde_json::from_str(&entry).expect("JSON");
        assert_eq!(entry["raw_base64"], "//57");
        assert!(entry["error"].as_str().expect("a reason").contains("UTF-8"));
    }
}
