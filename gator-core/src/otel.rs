//! Trace context from dispatch to run (feature `otel`): a job's span in the worker is the child
//! of the span it was dispatched in, across processes and languages.
//!
//! 1. **Dispatch.** Every client runs [`TracePropagation`] first among its client middleware:
//!    if the current `tracing` span has an OpenTelemetry context (the app installed a
//!    `tracing-opentelemetry` layer), it is recorded in the job's
//!    [headers](crate::payload::Payload::headers) as a W3C `traceparent` (and `tracestate`, if any).
//! 2. **Run.** A worker built with gator-worker's `otel` feature reads that header and makes
//!    the job's span (`job`, with `jid`, `job`, `queue`, `attempt`) its child
//!    ([`adopt_parent`]). Every attempt of a job is a child of the same dispatch.
//!
//! The header is the W3C one, so a producer in another language that writes
//! `"headers": {"traceparent": "00-<trace id>-<span id>-01"}` into the payload links its trace
//! too. Without a tracing-opentelemetry layer nothing is recorded, and a job without the
//! header gets a span of its own, as before.

use crate::middleware::DispatchMiddleware;
use crate::payload::{Headers, Payload};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C header that carries the trace context.
pub const TRACEPARENT: &str = "traceparent";

/// Client middleware that records the current span's trace context in each job's headers.
/// Every client starts with it when the `otel` feature is on.
#[derive(Debug, Clone, Copy, Default)]
pub struct TracePropagation;

impl DispatchMiddleware for TracePropagation {
    fn dispatch(&self, job: &mut Payload) -> Result<(), String> {
        let cx = tracing::Span::current().context();
        if cx.span().span_context().is_valid() {
            TraceContextPropagator::new().inject_context(&cx, &mut Writer(&mut job.headers));
        }
        Ok(())
    }
}

/// Makes `span` (a job's) the child of the trace context carried in `headers`, if they carry
/// a valid one; else leaves it as it is.
pub fn adopt_parent(span: &tracing::Span, headers: &Headers) {
    if !headers.contains_key(TRACEPARENT) {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&Reader(headers));
    if cx.span().span_context().is_valid() {
        // Fails only without an OpenTelemetry layer, or for a span already started: then
        // the job's span stays a root, and the job runs all the same.
        let _ = span.set_parent(cx);
    }
}

struct Writer<'a>(&'a mut Headers);

impl Injector for Writer<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

struct Reader<'a>(&'a Headers);

impl Extractor for Reader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}
