//! Recovery: puts the in-flight jobs of worker processes that died back at the head of their
//! queues.
//!
//! A process is dead when its heartbeat is older than [`PROCESS_TTL`], or at once when it ran
//! on this host and its pid no longer exists (so a worker restarted after a crash recovers its
//! predecessor's jobs without waiting for the TTL). Each queue's in-flight list is recovered by
//! one atomic script, so two workers recovering the same process move each job once.

use crate::fetcher::Fetcher;
use crate::heartbeat::{PROCESS_TTL, hostname};
use gator_core::Client;
use gator_core::payload::now_ms;
use gator_core::store::inflight::Fetched;
use gator_core::store::{inflight, processes};
use rand::RngExt;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How often, on average, a worker looks for dead processes.
pub const RECOVERY_INTERVAL: Duration = Duration::from_secs(10);

/// Looks for dead processes and recovers their jobs, and for this process's stranded ones.
#[derive(Debug)]
pub struct Recovery {
    /// Where the registry and the lists live.
    pub client: Client,
    /// This process's fetcher: its id, the queues it serves, the jobs it holds.
    pub fetcher: Arc<Fetcher>,
    /// Own in-flight jobs no processor held at the last pass, by queue and payload text.
    pub unheld: Mutex<HashSet<(String, String)>>,
    /// The average time between passes.
    pub interval: Duration,
}

impl Recovery {
    /// Recovers every `interval` (jittered) until `stop`.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            let pause = self.interval.mul_f64(rand::rng().random_range(0.5..1.5));
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
        let own_id = self.fetcher.process();
        dead.retain(|id| id != own_id);
        let mut total = self.release_stranded().await?;
        if dead.is_empty() {
            return Ok(total);
        }
        let mut queues = self.client.known_queues().await?;
        for queue in self.fetcher.order().all() {
            if !queues.contains(&queue) {
                queues.push(queue);
            }
        }
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

impl Recovery {
    /// A recovery loop for the process whose fetcher is `fetcher`, passing every `interval`
    /// on average.
    pub fn new(client: Client, fetcher: Arc<Fetcher>, interval: Duration) -> Recovery {
        Recovery {
            client,
            fetcher,
            unheld: Mutex::new(HashSet::new()),
            interval,
        }
    }

    /// Puts back this process's in-flight jobs that no processor has held on two passes in a
    /// row: their fetch ran in Redis but its reply was lost (a timeout, a Redis crash), so
    /// nothing here would ever settle them. One pass is not enough: a fetch whose reply is still
    /// on its way looks the same for a moment.
    async fn release_stranded(&self) -> gator_core::Result<usize> {
        let mut conn = self.client.connection();
        let keys = self.client.keys();
        let process = self.fetcher.process();
        let before = std::mem::take(&mut *self.unheld.lock().unwrap_or_else(|e| e.into_inner()));
        let mut now_unheld = HashSet::new();
        let mut released = 0;
        for queue in self.fetcher.order().all() {
            for raw in inflight::list(&mut conn, keys, &queue, process).await? {
                if self.fetcher.holds(&raw) {
                    continue;
                }
                let key = (queue.clone(), raw);
                if before.contains(&key) {
                    let job = Fetched {
                        queue: key.0,
                        process: process.to_owned(),
                        raw: key.1,
                    };
                    released += usize::from(inflight::release(&mut conn, keys, &job).await?);
                } else {
                    now_unheld.insert(key);
                }
            }
        }
        *self.unheld.lock().unwrap_or_else(|e| e.into_inner()) = now_unheld;
        if released > 0 {
            warn!(
                jobs = released,
                "put back in-flight jobs whose fetch reply was lost"
            );
        }
        Ok(released)
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
