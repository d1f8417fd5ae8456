//! A running job's progress, the job's side: [`Context::progress`] keeps the latest value in
//! memory and a flusher writes it to Redis at most [`WRITES_PER_SECOND`] times a second,
//! whatever the job calls; the worker's [`Context::finish_progress`] writes the last value
//! when the job returns, so it is never lost.
//!
//! A job that never reports costs nothing: no task, no allocation, no write; the worker's
//! end-of-job check is one atomic load. The first report spawns the job's flusher (one task,
//! for the rest of the attempt), which writes at once, then waits [`PERIOD`] before the next
//! write, and ends when nothing new came in that time (a later report starts another).

use super::Context;
use crate::error::{Error, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;

/// The most progress writes a job makes a second (plus the final one).
pub const WRITES_PER_SECOND: u32 = 4;

/// The least time between two progress writes of one job.
pub const PERIOD: Duration = Duration::from_millis(1000 / WRITES_PER_SECOND as u64);

/// The most bytes of a progress note that are stored; a longer one is cut (`gator_rules::cut`).
pub const MAX_NOTE: usize = 1024;

/// One progress report of one attempt, as a [`ProgressSink`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct ProgressReport<'a> {
    /// The list the job was fetched from (its status record's queue).
    pub queue: &'a str,
    /// The job id.
    pub jid: &'a str,
    /// The attempt reporting.
    pub attempt: u32,
    /// How much is done, 0 to 1.
    pub fraction: f64,
    /// The note, cut to [`MAX_NOTE`] bytes.
    pub note: &'a str,
}

/// Where a worker writes its jobs' progress (the worker's implementation calls
/// `store::progress::write`). A write's failure is the sink's to log: progress is advisory.
pub trait ProgressSink: Send + Sync + 'static {
    /// Writes one report.
    fn write<'a>(
        &'a self,
        report: ProgressReport<'a>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

/// A worker's progress sink and the runtime its flushers run on: one per worker, cloned
/// into each attempt's [`Context`] (two reference counts, no allocation).
#[derive(Clone)]
pub struct ProgressWriter {
    sink: Arc<dyn ProgressSink>,
    runtime: tokio::runtime::Handle,
}

impl ProgressWriter {
    /// A writer to `sink`, whose flushers run on `runtime`: the sync
    /// [`Context::progress_sync`] may then be called from any thread.
    pub fn new(sink: Arc<dyn ProgressSink>, runtime: tokio::runtime::Handle) -> ProgressWriter {
        ProgressWriter { sink, runtime }
    }
}

/// An attempt's progress: where it goes, and what is not written yet.
#[derive(Default)]
pub(super) struct Slot {
    writer: Option<ProgressWriter>,
    /// Set by the first report: the worker's end-of-job check reads only this.
    used: AtomicBool,
    state: Mutex<State>,
    wake: tokio::sync::Notify,
}

#[derive(Default)]
struct State {
    /// The latest report: fraction and note.
    latest: Option<(f64, String)>,
    /// Whether `latest` is not written yet.
    dirty: bool,
    /// Whether a flusher runs; its handle, for the final write.
    running: bool,
    flusher: Option<JoinHandle<()>>,
    /// The attempt ended: the flusher writes what is left without waiting, then stops.
    closed: bool,
}

impl Slot {
    pub(super) fn with_writer(writer: Option<ProgressWriter>) -> Slot {
        Slot {
            writer,
            ..Slot::default()
        }
    }

    pub(super) fn writer(&self) -> Option<ProgressWriter> {
        self.writer.clone()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Context {
    /// This context writing its progress through `writer` (the worker sets it; without one,
    /// progress is kept in memory only: [`Context::last_progress`]).
    pub fn with_progress(self, writer: ProgressWriter) -> Context {
        self.changed(|inner| inner.progress = Slot::with_writer(Some(writer)))
    }

    /// Records this attempt's progress: `fraction` done (0 to 1; NaN or out of range is
    /// [`Error::InvalidProgress`]) and a `note` (cut to 1,024 bytes). Returns at once: it
    /// awaits no Redis reply, only an uncontended lock; the job's flusher writes the latest
    /// value at most 4 times a second (`Client::progress` reads it), and the worker writes the
    /// last one when the job returns.
    pub async fn progress(&self, fraction: f64, note: impl AsRef<str>) -> Result<()> {
        self.progress_sync(fraction, note)
    }

    /// [`Context::progress`] from code that is not async (a `spawn_blocking` closure, a
    /// callback): the same coalescing, from any thread.
    pub fn progress_sync(&self, fraction: f64, note: impl AsRef<str>) -> Result<()> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(Error::InvalidProgress { fraction });
        }
        let note = gator_rules::cut(note.as_ref(), MAX_NOTE).into_owned();
        let slot = &self.inner.progress;
        slot.used.store(true, Ordering::Release);
        let mut state = slot.state();
        state.latest = Some((fraction, note));
        state.dirty = true;
        if let Some(writer) = &slot.writer
            && !state.running
            && !state.closed
        {
            state.running = true;
            state.flusher = Some(writer.runtime.spawn(self.clone().flush(writer.clone())));
        }
        Ok(())
    }

    /// The latest progress this attempt reported (fraction and note), written or not.
    pub fn last_progress(&self) -> Option<(f64, String)> {
        self.inner.progress.state().latest.clone()
    }

    /// Ends this attempt's progress: its last value is written (the flusher's pending write,
    /// without waiting for its period) before this returns. The worker calls it when the job
    /// returns; for a job that never reported, it is one atomic load.
    pub async fn finish_progress(&self) {
        let slot = &self.inner.progress;
        if !slot.used.load(Ordering::Acquire) {
            return;
        }
        let flusher = {
            let mut state = slot.state();
            state.closed = true;
            state.flusher.take()
        };
        if let Some(flusher) = flusher {
            slot.wake.notify_one();
            let _ = flusher.await;
        }
    }

    /// The flusher: writes the latest report, then waits a period (or the attempt's end), and
    /// again while there is something new; stops when there is not.
    async fn flush(self, writer: ProgressWriter) {
        let slot = &self.inner.progress;
        loop {
            let (report, closed) = {
                let mut state = slot.state();
                if !state.dirty {
                    state.running = false;
                    return;
                }
                state.dirty = false;
                (state.latest.clone(), state.closed)
            };
            if let Some((fraction, note)) = report {
                let report = ProgressReport {
                    queue: self.shard_queue(),
                    jid: self.jid(),
                    attempt: self.attempt(),
                    fraction,
                    note: &note,
                };
                writer.sink.write(report).await;
            }
            if !closed {
                tokio::select! {
                    _ = tokio::time::sleep(PERIOD) => {}
                    _ = slot.wake.notified() => {}
                }
            }
        }
    }
}
