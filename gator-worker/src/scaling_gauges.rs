//! The autoscaling gauges `--metrics-bind` serves: per queue this worker serves, the signal
//! of [`gator_core::admin::scaling`], sampled with the queue gauges every
//! [`crate::observer::SAMPLE_EVERY`] (metrics on only), aiming at
//! `--scaling-target-latency`.
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `gator_queue_backlog` | gauge | queue | jobs waiting to start now |
//! | `gator_queue_busy` | gauge | queue | jobs of the queue held by live workers |
//! | `gator_queue_capacity` | gauge | queue | jobs the live workers serving it may run at once |
//! | `gator_queue_workers` | gauge | queue | live worker processes serving it |
//! | `gator_queue_throughput` | gauge | queue | attempts ended per second, last 5 minutes |
//! | `gator_queue_suggested_workers` | gauge | queue | workers needed for the target latency |
//!
//! (`gator_queue_latency_seconds`, the age of the oldest waiting job, is the observer's.)

use gator_core::admin::ScalingPolicy;
use gator_core::{Admin, Client};
use tracing::warn;

/// Sets the scaling gauges of `queues` under `policy`; a failed read is logged and the gauges
/// keep their last values until the next sample.
pub async fn sample(client: &Client, queues: &[String], policy: ScalingPolicy) {
    let scaling = match Admin::new(client.clone()).scaling_of(queues, policy).await {
        Ok(scaling) => scaling,
        Err(e) => {
            warn!(error = %e, "could not sample the queues for their scaling gauges");
            return;
        }
    };
    for (queue, row) in scaling.queues {
        if row.broken.is_some() {
            continue;
        }
        let labels = [("queue", queue)];
        metrics::gauge!("gator_queue_backlog", &labels).set(row.backlog as f64);
        metrics::gauge!("gator_queue_busy", &labels).set(row.busy as f64);
        metrics::gauge!("gator_queue_capacity", &labels).set(row.capacity as f64);
        metrics::gauge!("gator_queue_workers", &labels).set(row.workers as f64);
        metrics::gauge!("gator_queue_throughput", &labels).set(row.throughput);
        metrics::gauge!("gator_queue_suggested_workers", &labels)
            .set(f64::from(row.suggested_workers));
    }
}
