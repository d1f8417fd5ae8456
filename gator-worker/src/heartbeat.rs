//! The heartbeat: every quarter of the lease it renews this process's leases on its queues
//! (what keeps other workers from recovering its in-flight jobs), registers it in the fleet
//! (counted by the poller, shown to operators), learns Redis's clock, and checks that Redis
//! will not evict jobs.

use crate::clock::RedisClock;
use crate::config::WorkerConfig;
use crate::leases::Leases;
use crate::memory::{self, Eviction};
use gator_core::Client;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How soon a failed lease renewal is tried again.
const RETRY_RENEWAL: Duration = Duration::from_millis(250);

/// This worker process's registration and leases.
#[derive(Debug)]
pub struct Heartbeat {
    /// Where to beat.
    pub client: Client,
    /// `<host>:<pid>:<nonce>`, or `<worker id>:<nonce>`: unique per run of a process.
    pub id: String,
    /// The JSON stored under the process key.
    pub info: String,
    /// The leases to renew.
    pub leases: Arc<Leases>,
    /// Learns Redis's clock from each beat.
    pub clock: Arc<RedisClock>,
    /// The live processes of the fleet, this one included, as of the last beat.
    pub fleet: Arc<AtomicUsize>,
    eviction: Mutex<Option<Eviction>>,
    /// Whether the last beat reached Redis; the first one after a failure re-checks eviction.
    reached: AtomicBool,
}

impl Heartbeat {
    /// The heartbeat of process `id` for `config`.
    pub fn new(
        client: Client,
        config: &WorkerConfig,
        id: String,
        leases: Arc<Leases>,
        clock: Arc<RedisClock>,
    ) -> Heartbeat {
        let info = serde_json::to_string(&crate::door::Description {
            id: id.clone(),
            host: hostname(),
            pid: std::process::id(),
            worker_id: config.worker_id.clone(),
            queues: config.queues.to_string(),
            concurrency: u32::try_from(config.concurrency).unwrap_or(u32::MAX),
            lease_ms: config.lease.as_millis() as u64,
            started_at: clock.now_ms(),
        })
        .expect("a process description always serializes");
        Heartbeat {
            client,
            id,
            info,
            leases,
            clock,
            fleet: Arc::new(AtomicUsize::new(1)),
            eviction: Mutex::new(None),
            reached: AtomicBool::new(false),
        }
    }

    /// Beats every quarter of the lease until `stop`. Deregistering is the launcher's call:
    /// only a process that put back everything it held may.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut pause = self.leases.renew_every();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.cancelled() => return,
            }
            // After a failure, try again at once and again, not a quarter-lease later: once
            // Redis answers, the leases must be renewed before they run out.
            pause = match self.tick().await {
                Ok(true) => self.leases.renew_every(),
                Ok(false) => RETRY_RENEWAL,
                Err(e) => {
                    warn!(error = %e, "heartbeat failed; trying again");
                    self.leases.renew_every()
                }
            };
        }
    }

    /// One beat: leases first (they guard the jobs), then the registry and the eviction check.
    /// Returns whether the leases were renewed.
    pub async fn tick(&self) -> gator_core::Result<bool> {
        if !self.leases.renew_all().await {
            return Ok(false);
        }
        let beat = crate::door::presence(&self.client)
            .beat(&self.id, &self.info, self.leases.ttl())
            .await;
        let beat = match beat {
            Ok(beat) => beat,
            Err(e) => {
                self.reached.store(false, Ordering::Relaxed);
                return Err(e);
            }
        };
        self.fleet.store(beat.live, Ordering::Relaxed);
        self.clock.observe(beat.now_ms);
        let reconnected = !self.reached.swap(true, Ordering::Relaxed);
        self.check_eviction(reconnected).await;
        Ok(true)
    }

    /// Reads the eviction policy; reports it at start, after a reconnect, and when it changed.
    async fn check_eviction(&self, reconnected: bool) {
        let Ok(Some(now)) = memory::read(&self.client).await else {
            return; // a failed read is the next beat's business
        };
        let mut last = self.eviction.lock().unwrap_or_else(|e| e.into_inner());
        if reconnected || last.as_ref() != Some(&now) {
            memory::report(&now);
        }
        *last = Some(now);
    }

    /// Removes this process from the registry (a clean exit that put back everything it held).
    pub async fn deregister(&self) {
        if let Err(e) = crate::door::presence(&self.client)
            .remove_process(&self.id)
            .await
        {
            warn!(error = %e, "could not deregister this process; its registration expires by itself");
        }
    }
}

pub use crate::identity::{hostname, process_id};
