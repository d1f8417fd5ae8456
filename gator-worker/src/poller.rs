//! The poller: moves due scheduled and retry jobs into their queues.

use crate::fetcher::QueueOrder;
use gator_core::Client;
use gator_core::payload::now_ms;
use gator_core::store;
use rand::RngExt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// Promotes due jobs of the worker's queues every `interval` on average.
pub struct Poller {
    /// Where the sets live.
    pub client: Client,
    /// The queues served; also refreshed here when the worker serves every known queue.
    pub order: Arc<QueueOrder>,
    /// The average time between passes.
    pub interval: Duration,
}

impl Poller {
    /// Polls until `stop` is cancelled.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            if let Err(e) = self.tick().await {
                warn!(error = %e, "could not promote due jobs; trying again next pass");
            }
            // Jittered (0.5×–1.5×) so that many workers started together spread their passes.
            let pause = self.interval.mul_f64(rand::rng().random_range(0.5..1.5));
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.cancelled() => return,
            }
        }
    }

    /// One pass: refresh the queue list, then promote what is due in each queue.
    /// Returns how many jobs moved.
    pub async fn tick(&self) -> gator_core::Result<usize> {
        self.order.refresh(&self.client).await?;
        let now = now_ms();
        let mut moved = 0;
        for queue in self.order.all() {
            moved += store::schedule::promote_due(
                &mut self.client.connection(),
                self.client.keys(),
                &queue,
                now,
            )
            .await?;
        }
        if moved > 0 {
            debug!(moved, "promoted due jobs");
        }
        Ok(moved)
    }
}
