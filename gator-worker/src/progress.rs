//! Where this worker's jobs' progress goes: the [`ProgressSink`] each attempt's `Context`
//! writes through (`gator_core::context`'s flusher coalesces the reports; this writes one),
//! `Run::write_progress` (`door::run`) on the worker's shared connection.

use gator_core::Client;
use gator_core::context::{ProgressReport, ProgressSink, ProgressWriter};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tracing::warn;

/// Writes progress reports to Redis with the worker's client.
pub struct ProgressStore {
    client: Client,
}

impl ProgressStore {
    /// The writer every processor of the worker hands its jobs' contexts: one per worker.
    pub fn writer(client: Client) -> ProgressWriter {
        ProgressWriter::new(
            Arc::new(ProgressStore { client }),
            tokio::runtime::Handle::current(),
        )
    }
}

impl ProgressSink for ProgressStore {
    fn write<'a>(
        &'a self,
        report: ProgressReport<'a>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let written = crate::door::run(&self.client)
                .write_progress(
                    (report.queue, report.jid),
                    (report.fraction, report.attempt, report.note),
                )
                .await;
            // Advisory: a lost report is replaced by the next one, or the last at the end.
            if let Err(error) = written {
                warn!(error = %error, "could not record a job's progress");
            }
        })
    }
}
