//! The heartbeat: tells Redis this process is alive, so other workers can count the fleet
//! (the poller spreads its passes over it) and notice processes that died.

use crate::config::WorkerConfig;
use gator_core::Client;
use gator_core::payload::now_ms;
use gator_core::store;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::warn;

/// How often a process renews its registration.
pub const BEAT_INTERVAL: Duration = Duration::from_secs(5);
/// A process not heard from for this long is presumed dead: four missed beats, so a
/// stalled event loop or a Redis blip does not declare a live worker dead.
pub const PROCESS_TTL: Duration = Duration::from_secs(20);

/// This worker process's registration.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    /// Where to beat.
    pub client: Client,
    /// `<host>:<pid>:<random>`: unique per run of a process.
    pub id: String,
    /// The JSON stored under the process key.
    pub info: String,
}

impl Heartbeat {
    /// The registration of this process for `config`.
    pub fn new(client: Client, config: &WorkerConfig) -> Heartbeat {
        let host = hostname();
        let pid = std::process::id();
        let id = format!("{host}:{pid}:{:06x}", rand::random::<u32>() & 0xff_ffff);
        let info = serde_json::json!({
            "id": id,
            "host": host,
            "pid": pid,
            "queues": config.queues.to_string(),
            "concurrency": config.concurrency,
            "started_at": now_ms(),
        })
        .to_string();
        Heartbeat { client, id, info }
    }

    /// Beats every [`BEAT_INTERVAL`] until `stop`, then deregisters.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            if let Err(e) = self.tick().await {
                warn!(error = %e, "heartbeat failed; trying again");
            }
            tokio::select! {
                _ = tokio::time::sleep(BEAT_INTERVAL) => {}
                _ = stop.cancelled() => break,
            }
        }
        if let Err(e) =
            store::processes::remove(&mut self.client.connection(), self.client.keys(), &self.id)
                .await
        {
            warn!(error = %e, "could not deregister this process; its registration expires by itself");
        }
    }

    /// One beat.
    pub async fn tick(&self) -> gator_core::Result<()> {
        store::processes::beat(
            &mut self.client.connection(),
            self.client.keys(),
            &self.id,
            &self.info,
            now_ms(),
            PROCESS_TTL,
        )
        .await
    }
}

/// This machine's name, for process ids an operator can read.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned())
}
