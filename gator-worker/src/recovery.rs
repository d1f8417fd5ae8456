//! Recovery: puts the in-flight jobs of worker processes that died back at the head of their
//! queues.
//!
//! A process is dead when its heartbeat is older than [`PROCESS_TTL`], or at once when it ran
//! on this host and its pid no longer exists (so a worker restarted after a crash recovers its
//! predecessor's jobs without waiting for the TTL). Each queue's in-flight list is recovered by
//! one atomic script, so two workers recovering the same process move each job once.

use crate::fetcher::QueueOrder;
use crate::heartbeat::{PROCESS_TTL, hostname};
use gator_core::Client;
use gator_core::payload::now_ms;
use gator_core::store::{inflight, processes};
use rand::RngExt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How often, on average, a worker looks for dead processes.
pub const RECOVERY_INTERVAL: Duration = Duration::from_secs(10);

/// Looks for dead processes and recovers their jobs.
#[derive(Debug, Clone)]
pub struct Recovery {
    /// Where the registry and the lists live.
    pub client: Client,
    /// This process's id, never recovered by itself while it runs.
    pub own_id: String,
    /// The queues this worker serves: searched for orphans as well as the known-queues set.
    pub served: Arc<QueueOrder>,
}

impl Recovery {
    /// Recovers every [`RECOVERY_INTERVAL`] (jittered) until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            let pause = RECOVERY_INTERVAL.mul_f64(rand::rng().random_range(0.5..1.5));
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.cancelled() => return,
            }
            if let Err(e) = self.tick().await {
                warn!(error = %e, "could not look for dead worker processes; trying again later");
            }
        }
    }

    /// One pass; returns how many jobs were put back.
    pub async fn tick(&self) -> gator_core::Result<usize> {
        let mut conn = self.client.connection();
        let keys = self.client.keys();
        let mut dead = processes::expired(&mut conn, keys, now_ms(), PROCESS_TTL).await?;
        for id in processes::all(&mut conn, keys).await? {
            if !dead.contains(&id) && died_on_this_host(&id) {
                dead.push(id);
            }
        }
        dead.retain(|id| *id != self.own_id);
        if dead.is_empty() {
            return Ok(0);
        }
        let mut queues = self.client.known_queues().await?;
        for queue in self.served.all() {
            if !queues.contains(&queue) {
                queues.push(queue);
            }
        }
        let mut total = 0;
        for id in dead {
            let mut recovered = 0;
            for queue in &queues {
                recovered += inflight::recover(&mut conn, keys, queue, &id).await?;
            }
            processes::remove(&mut conn, keys, &id).await?;
            if recovered > 0 {
                warn!(process = %id, jobs = recovered, "recovered the in-flight jobs of a dead worker process");
            }
            total += recovered;
        }
        Ok(total)
    }
}

/// Whether process id `host:pid:nonce` ran on this host and its pid is gone.
fn died_on_this_host(id: &str) -> bool {
    let mut parts = id.rsplitn(3, ':');
    let (Some(_nonce), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    host == hostname()
        && pid.parse::<u32>().is_ok_and(|pid| {
            pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_vanished_pid_on_this_host_counts_as_dead_at_once() {
        let me = std::process::id();
        assert!(
            !died_on_this_host(&format!("{}:{me}:abc", hostname())),
            "this process is alive"
        );
        assert!(
            died_on_this_host(&format!("{}:4000000000:abc", hostname())),
            "no such pid"
        );
        assert!(
            !died_on_this_host("some-other-host:4000000000:abc"),
            "another host's pids are not ours to judge"
        );
        assert!(!died_on_this_host("garbage"));
    }
}
