//! JSON shapes of gator-core's types that are not `Serialize` themselves: a set entry, a job
//! status, a periodic entry, a workflow. Times are ms since the epoch (Redis time).

use gator_core::SetEntry;
use gator_core::admin::Periodic;
use gator_core::admin::preview;
use gator_core::status::JobStatus;
use gator_core::workflow::{StepState, WorkflowState, WorkflowStatus};
use serde::Serialize;
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// ms since the epoch.
pub(crate) fn ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// One entry of a scheduled, retry or dead set, as a listing shows it: its arguments, error
/// and unparsed text cut to a bounded size (`gator_core::admin::preview`); whole on the job's
/// own page.
#[derive(Debug, Serialize)]
pub(crate) struct EntryView {
    pub set: &'static str,
    pub queue: String,
    /// Due time (scheduled, retry) or time of death (dead).
    pub score_ms: u64,
    pub jid: Option<String>,
    pub job: Option<String>,
    pub args: Value,
    /// Whether `args` is a preview of larger arguments.
    pub args_cut: bool,
    pub attempt: Option<u32>,
    pub error: Option<String>,
    pub created_at: Option<u64>,
    pub failed_at: Option<u64>,
    /// Whether it can be retried (a payload with a job name).
    pub runnable: bool,
    /// The text a worker could not use, for an entry that is not a runnable payload.
    pub unparsed: Option<String>,
    /// For a durable job suspended in the scheduled set: why (`sleep 2`, `slice 3`), from its
    /// status record; `score_ms` is when it wakes ([`EntryView::with_suspensions`]).
    pub suspended: Option<String>,
}

impl EntryView {
    /// `entries` as views, each suspended one with its reason ([`gator_core::Admin::suspensions`]:
    /// the status records of the durable jobs among them, in one read; none for other jobs).
    pub(crate) async fn with_suspensions(
        admin: &gator_core::Admin,
        entries: &[SetEntry],
    ) -> gator_core::Result<Vec<EntryView>> {
        let reasons = admin.suspensions(entries).await?;
        Ok(entries
            .iter()
            .zip(reasons)
            .map(|(entry, reason)| EntryView {
                suspended: reason,
                ..EntryView::from(entry)
            })
            .collect())
    }
}

impl From<&SetEntry> for EntryView {
    fn from(entry: &SetEntry) -> EntryView {
        let p = entry.payload.as_ref();
        let args = p.map_or(Value::Null, |p| preview::args(p.args.clone()));
        EntryView {
            set: entry.kind.as_str(),
            queue: entry.queue.clone(),
            score_ms: entry.score_ms,
            jid: p.map(|p| p.jid.clone()),
            job: p.map(|p| p.job.clone()),
            args_cut: preview::is_cut(&args),
            args,
            attempt: p.map(|p| p.attempt),
            error: p.and_then(|p| p.error.as_deref()).map(preview::error),
            created_at: p.map(|p| p.created_at),
            failed_at: p.and_then(|p| p.failed_at),
            runnable: entry.is_runnable(),
            unparsed: entry.unparsed_text().map(preview::text),
            suspended: None,
        }
    }
}

/// A job status record as JSON: `state` plus the fields of that state.
#[derive(Debug, Default, Serialize)]
pub(crate) struct StatusView {
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_at_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_key: Option<String>,
    /// A suspended job: why (`sleep 2`, `slice 3`); `at_ms` is when it wakes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// An expired job's deadline (ms, Redis time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    /// An expired job: whether it is kept in the dead set (else it was dropped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<bool>,
}

impl StatusView {
    /// An expired job's fields: when it was found expired, its deadline, its attempts, the
    /// reason, and whether it is kept in the dead set.
    fn expired(&mut self, status: &JobStatus) {
        if let JobStatus::Expired {
            at,
            attempts,
            deadline,
            kept,
        } = status
        {
            self.at_ms = Some(ms(*at));
            self.deadline_ms = Some(ms(*deadline));
            self.attempts = Some(*attempts);
            self.error = Some(gator_core::expiry::REASON.to_owned());
            self.kept = Some(*kept);
        }
    }
}

impl From<&JobStatus> for StatusView {
    fn from(status: &JobStatus) -> StatusView {
        let mut view = StatusView {
            state: status.name(),
            ..StatusView::default()
        };
        match status {
            JobStatus::Queued | JobStatus::Unknown => {}
            JobStatus::Scheduled { at } => view.at_ms = Some(ms(*at)),
            JobStatus::Suspended { until, reason } => {
                view.at_ms = Some(ms(*until));
                view.reason = Some(preview::error(reason)); // free text: bounded
            }
            JobStatus::Running {
                process,
                since,
                attempt,
            } => {
                view.process = Some(process.clone());
                view.since_ms = Some(ms(*since));
                view.attempt = Some(*attempt);
            }
            JobStatus::Retrying {
                attempt,
                next_at,
                error,
            } => {
                view.attempt = Some(*attempt);
                view.next_at_ms = Some(ms(*next_at));
                view.error = Some(preview::error(error));
            }
            JobStatus::Dead {
                at,
                attempts,
                error,
            }
            | JobStatus::Discarded {
                at,
                attempts,
                error,
            } => {
                view.at_ms = Some(ms(*at));
                view.attempts = Some(*attempts);
                view.error = Some(preview::error(error));
            }
            JobStatus::Done {
                finished_at,
                attempts,
            } => {
                view.at_ms = Some(ms(*finished_at));
                view.attempts = Some(*attempts);
            }
            JobStatus::AwaitingReply { key, deadline } => {
                view.reply_key = Some(key.clone());
                view.at_ms = Some(ms(*deadline));
            }
            JobStatus::Cancelled { at } => view.at_ms = Some(ms(*at)),
            JobStatus::Expired { .. } => view.expired(status),
        }
        view
    }
}

/// A periodic entry with its state.
#[derive(Debug, Serialize)]
pub(crate) struct PeriodicView {
    pub name: String,
    pub cron: String,
    pub tz: String,
    pub queue: String,
    pub job: String,
    pub args: Value,
    pub source: gator_core::cron::Source,
    pub paused: bool,
    pub last_fired_ms: Option<u64>,
    pub next_ms: Option<u64>,
}

impl From<Periodic> for PeriodicView {
    fn from(p: Periodic) -> PeriodicView {
        PeriodicView {
            name: p.entry.name,
            cron: p.entry.cron,
            tz: p.entry.tz,
            queue: p.entry.queue,
            job: p.entry.job,
            args: p.entry.args,
            source: p.entry.source,
            paused: p.paused,
            last_fired_ms: p.last_fired,
            next_ms: p.next,
        }
    }
}

/// A workflow and its steps.
#[derive(Debug, Serialize)]
pub(crate) struct WorkflowView {
    pub id: String,
    pub state: &'static str,
    pub created_at_ms: u64,
    pub steps: Vec<StepView>,
}

/// One step of a [`WorkflowView`].
#[derive(Debug, Serialize)]
pub(crate) struct StepView {
    pub jid: String,
    pub job: String,
    pub queue: String,
    pub parents: Vec<String>,
    /// `waiting`, `cancelled`, or the job's own status.
    pub state: StatusView,
    pub result: Option<Value>,
}

impl From<&WorkflowStatus> for WorkflowView {
    fn from(w: &WorkflowStatus) -> WorkflowView {
        WorkflowView {
            id: w.id.clone(),
            state: match w.state {
                WorkflowState::Running => "running",
                WorkflowState::Halted => "halted",
                WorkflowState::Done => "done",
                WorkflowState::Failed => "failed",
                WorkflowState::Cancelled => "cancelled",
            },
            created_at_ms: ms(w.created_at),
            steps: w
                .steps
                .iter()
                .map(|s| StepView {
                    jid: s.jid.clone(),
                    job: s.job.clone(),
                    queue: s.queue.clone(),
                    parents: s.parents.clone(),
                    state: match &s.state {
                        StepState::Waiting => StatusView {
                            state: "waiting",
                            ..StatusView::default()
                        },
                        StepState::Cancelled => StatusView {
                            state: "cancelled",
                            ..StatusView::default()
                        },
                        StepState::Job(status) => StatusView::from(status),
                    },
                    result: s.result.as_deref().map(json_or_text),
                })
                .collect(),
        }
    }
}

/// A stored result: its JSON, or the text as a string if it is not JSON.
pub(crate) fn json_or_text(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}
