//! `--metrics-bind`: serves the worker's metrics ([`crate::observer`]) to Prometheus over HTTP,
//! with `metrics-exporter-prometheus`'s own listener.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use std::net::SocketAddr;

/// Buckets of the duration and wait histograms, in seconds: from a millisecond (the short jobs
/// a worker drains by the thousand) to ten minutes.
const SECONDS_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0,
];

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve metrics on {addr}: {reason}")]
pub struct ServeError {
    addr: SocketAddr,
    reason: String,
}

/// Installs the Prometheus recorder and serves `http://addr/metrics` on the current runtime.
/// Call it inside the runtime the worker runs on.
pub fn serve(addr: SocketAddr) -> Result<(), ServeError> {
    let error = |reason: String| ServeError { addr, reason };
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .map_err(|e| error(e.to_string()))?
        .install()
        .map_err(|e| error(e.to_string()))
}
