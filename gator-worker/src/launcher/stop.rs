//! Shutdown, steps 3 to 5 (see [`crate::launcher`]): running jobs get their time, the successes
//! of jobs under flow control are written, what is left in flight goes back, and the heartbeat
//! stops last.

use super::run::Running;
use crate::fetcher::{FETCH_TIMEOUT, Fetcher};
use gator_core::client::DEDICATED_RESPONSE_TIMEOUT;
use std::time::Duration;
use tracing::{info, warn};

/// How long jobs whose contexts were cancelled at the shutdown deadline get to settle.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// How long shutdown waits for the pending successes of jobs under flow control to be written.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

impl Running {
    /// Shuts down, once the stop token was cancelled (steps 1 and 2 happen by themselves).
    pub(super) async fn stop(self) {
        let timeout = self.shutdown_timeout;
        info!(timeout = ?timeout, "stopping: waiting for running jobs to finish");
        // 3. Running jobs finish and settle.
        let mut finished = tokio::time::timeout(timeout, self.tracker.wait())
            .await
            .is_ok();
        if !finished {
            // The deadline: running jobs' contexts are cancelled, and a job that stops when
            // told gets a moment to settle before what is left is put back.
            self.deadline.cancel();
            finished = tokio::time::timeout(CANCEL_GRACE, self.tracker.wait())
                .await
                .is_ok();
        }
        // 4. The successes of jobs under flow control are written before anything is put
        //    back, or those jobs would run again; then what is left in flight goes back.
        let flushed_by = tokio::time::Instant::now() + FLUSH_TIMEOUT;
        self.settler.flush_admitted(flushed_by).await;
        let fetches_done = wait_for_fetches(&self.fetcher).await;
        let complete = self.recovery.put_back_own(fetches_done, finished).await;
        // 5. The heartbeat stops; the process deregisters if nothing is left leased.
        self.heartbeat_stop.cancel();
        for task in self.background {
            let _ = task.await;
        }
        if complete {
            self.heartbeat.deregister().await;
        }
    }
}

/// Waits until no fetch is under way, so none can land a job after the lists were emptied;
/// false if one still is at the deadline (a blocked fetch ends by then unless its connection
/// hangs, and that one times out soon after).
async fn wait_for_fetches(fetcher: &Fetcher) -> bool {
    let deadline = tokio::time::Instant::now()
        + FETCH_TIMEOUT
        + DEDICATED_RESPONSE_TIMEOUT
        + Duration::from_secs(1);
    while fetcher.fetches_in_flight() > 0 {
        if tokio::time::Instant::now() >= deadline {
            warn!(
                "a fetch is still under way: this process's leases are left to expire, and the fleet recovers whatever it lands"
            );
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}
