//! Durable jobs, the job's side: what a run saves so that the next run of the same job (after
//! a kill, a shutdown, a retry, a failover) starts where it stopped: a checkpoint
//! ([`Context::checkpoint`](crate::Context::checkpoint), read back with [`Context::resume`](crate::Context::resume)), the results of steps that
//! ran once ([`Context::step`](crate::Context::step)), sleeps that end the run and park the job
//! ([`Context::sleep`](crate::Context::sleep)), and iteration over a cursor with a time slice ([`Context::iterate`](crate::Context::iterate)).
//!
//! Everything saved lives in the job's own payload (its `durable` field, [`Saved`]): the
//! fetch that takes the job reads it, with no round trip of its own, and each save rewrites
//! the payload in the process's in-flight list, checked against the process's lease, in one
//! script (the worker's [`DurableSink`]). So whatever puts the job back (recovery, shutdown,
//! a retry) puts back what it saved, and it is removed with the job's record.
//!
//! A job that uses none of it pays one allocation at its start (the slot below) and nothing
//! else: no read, no write.

mod api;
mod iterate;

pub use crate::wire::durable::{
    MAX_CHECKPOINT_BYTES, MAX_SLEEPS, MAX_STEP_NAME, MAX_STEPS, MAX_STEPS_BYTES, Saved, StepResult,
    Stored, Wake,
};
pub use iterate::{Iteration, Next};

use crate::error::Result;
use crate::failure::JobError;
use crate::payload::PayloadDocument;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// One save of a running job's durable state, as a [`DurableSink`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct Save<'a> {
    /// The list the job was fetched from.
    pub queue: &'a str,
    /// The process whose in-flight list holds it.
    pub process: &'a str,
    /// The payload as it is in flight now.
    pub was: &'a str,
    /// The payload with the new state.
    pub now: &'a str,
}

/// Where a worker saves its jobs' durable state (the worker's implementation runs the store's
/// save script). A save is idempotent: saving again after a lost reply finds it done.
pub trait DurableSink: Send + Sync + 'static {
    /// Writes one save.
    fn save<'a>(
        &'a self,
        save: Save<'a>,
    ) -> Pin<Box<dyn Future<Output = Result<Stored>> + Send + 'a>>;
}

/// A worker's durable sink, cloned into each attempt's [`crate::Context`] (one reference count).
#[derive(Clone)]
pub struct DurableWriter(Arc<dyn DurableSink>);

impl DurableWriter {
    /// A writer to `sink`.
    pub fn new(sink: Arc<dyn DurableSink>) -> DurableWriter {
        DurableWriter(sink)
    }
}

/// A run that ended parked ([`Context::sleep`](crate::Context::sleep), or a slice yielded): what the worker writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspension {
    /// The payload to park, with what the run saved and the sleep recorded.
    pub payload: String,
    /// When it runs again.
    pub wake: Wake,
    /// Why, for its status record (`sleep 2`, `slice 3`).
    pub reason: String,
}

/// An attempt's durable state: where it saves, and what it saved.
pub(super) struct Slot {
    writer: Option<DurableWriter>,
    process: String,
    queue: String,
    /// Held across a save, so that saves of one job run one after another.
    writing: tokio::sync::Mutex<()>,
    data: std::sync::Mutex<Tracked>,
}

#[derive(Default)]
struct Tracked {
    /// The payload as in flight now; `None` for a context the worker did not make.
    text: Option<String>,
    /// What is saved, read from `text` at the first use.
    saved: Option<Saved>,
    /// Whether a save changed the payload in flight.
    changed: bool,
    /// Sleeps called in this run.
    sleeps_seen: u32,
    /// The suspension the run asked for.
    suspension: Option<Suspension>,
}

impl Slot {
    pub(super) fn detached() -> Slot {
        Slot::new(None, String::new(), String::new(), None)
    }

    fn new(
        writer: Option<DurableWriter>,
        process: String,
        queue: String,
        text: Option<String>,
    ) -> Slot {
        Slot {
            writer,
            process,
            queue,
            writing: tokio::sync::Mutex::new(()),
            data: std::sync::Mutex::new(Tracked {
                text,
                ..Tracked::default()
            }),
        }
    }

    fn data(&self) -> std::sync::MutexGuard<'_, Tracked> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Tracked {
    /// What is saved, read from the payload at the first use.
    fn saved(&mut self) -> std::result::Result<&Saved, JobError> {
        if self.saved.is_none() {
            let found = match &self.text {
                Some(text) => {
                    let doc = PayloadDocument::parse(text.as_bytes())
                        .map_err(|e| JobError::discard(e.to_string()))?;
                    Saved::parse(doc.durable()).map_err(JobError::discard)?
                }
                None => Saved::default(),
            };
            self.saved = Some(found);
        }
        Ok(self.saved.get_or_insert_with(Saved::default))
    }

    /// The payload with `next` as its saved state (`None` for a detached context).
    fn rewritten(&self, next: &Saved) -> Option<String> {
        let text = self.text.as_ref()?;
        let doc = PayloadDocument::parse(text.as_bytes()).ok()?;
        Some(doc.rewrite(&[("durable", next.to_json())]))
    }
}

impl crate::context::Context {
    /// This context saving its durable state through `writer`, for the job `payload` (as
    /// fetched) in the in-flight list of `process` (the worker sets it for every attempt).
    pub fn with_durable(
        self,
        writer: DurableWriter,
        process: &str,
        payload: &str,
    ) -> crate::context::Context {
        let queue = self.shard_queue().to_owned();
        let slot = Slot::new(
            Some(writer),
            process.to_owned(),
            queue,
            Some(payload.to_owned()),
        );
        self.changed(|inner| inner.durable = std::sync::OnceLock::from(Arc::new(slot)))
    }

    /// This attempt's durable slot: the worker's, or one kept in memory for a context made
    /// without it (a test calling a job fn).
    fn durable_slot(&self) -> &Slot {
        self.inner
            .durable
            .get_or_init(|| Arc::new(Slot::detached()))
    }

    /// The payload in flight now, if a save of this attempt changed it: the worker settles
    /// the job with it (and records a failure in it). `None` if nothing was saved.
    pub fn durable_payload(&self) -> Option<String> {
        let data = self.durable_slot().data();
        data.changed.then(|| data.text.clone()).flatten()
    }

    /// The suspension this attempt asked for ([`Context::sleep`](crate::Context::sleep), a yielded slice), taken:
    /// the worker parks the job with it, whatever the job returned.
    pub fn take_suspension(&self) -> Option<Suspension> {
        self.durable_slot().data().suspension.take()
    }

    /// Whether this attempt asked to be suspended (and has not been yet).
    pub fn is_suspending(&self) -> bool {
        self.durable_slot().data().suspension.is_some()
    }

    /// Saves `next` as the job's durable state: the payload in flight is rewritten (one
    /// script, checked against the lease), then kept as this attempt's.
    async fn save(&self, next: Saved) -> std::result::Result<(), JobError> {
        let slot = self.durable_slot();
        let _one_at_a_time = slot.writing.lock().await;
        let (was, now) = {
            let data = slot.data();
            (data.text.clone(), data.rewritten(&next))
        };
        if let (Some(writer), Some(was), Some(now)) = (&slot.writer, &was, &now) {
            let save = Save {
                queue: &slot.queue,
                process: &slot.process,
                was,
                now,
            };
            match writer.0.save(save).await {
                Ok(Stored::Saved) => {}
                Ok(Stored::Lost) => {
                    return Err(JobError::new(
                        "the job is no longer in flight in this process (its lease lapsed, and it was put back): this run stops",
                    ));
                }
                Err(e) => {
                    return Err(JobError::new(format!(
                        "could not save the job's durable state: {e}"
                    )));
                }
            }
        }
        let mut data = slot.data();
        data.changed |= now.is_some();
        if now.is_some() {
            data.text = now;
        }
        data.saved = Some(next);
        Ok(())
    }
}
