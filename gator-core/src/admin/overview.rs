//! The fleet at a glance: what the dashboard's first page and `gator-worker stats` show.

use super::Admin;
use crate::error::Result;
use crate::store::broken::BrokenKey;
use serde::Serialize;

/// Totals over every known queue, the fleet, and the Redis server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overview {
    /// Attempts that ended, all time (as Sidekiq's "processed": failures included).
    pub processed: u64,
    /// Attempts that failed, all time.
    pub failed: u64,
    /// Jobs waiting to start.
    pub enqueued: u64,
    /// Jobs fetched by a worker and not settled yet.
    pub busy: u64,
    /// Jobs scheduled to run later.
    pub scheduled: u64,
    /// Failed jobs waiting for their next attempt.
    pub retries: u64,
    /// Jobs in the dead sets.
    pub dead: u64,
    /// Live worker processes.
    pub processes: usize,
    /// Known queues (a shard counts as one).
    pub queues: usize,
    /// The queues that could not be read ([`QueueInfo::broken`](crate::admin::QueueInfo::broken) says why); the totals
    /// above are of the others.
    pub broken_queues: Vec<String>,
    /// The global keys (not of one queue) that hold what Gator did not write there, with the
    /// reason (`crate::store::broken`): what reads them sees them empty.
    pub broken_keys: Vec<BrokenKey>,
    /// Redis's clock when this was read (ms since the epoch).
    pub now_ms: u64,
    /// The Redis server (on a cluster: the masters, summed).
    pub redis: RedisInfo,
}

/// What `INFO` says of the Redis server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RedisInfo {
    /// `redis` or `valkey` (`server_name`).
    pub server: String,
    /// The server's own version: `valkey_version` for Valkey (whose `redis_version` says
    /// 7.2.4 whatever its version), else `redis_version`.
    pub version: String,
    /// `standalone` or `cluster`.
    pub mode: String,
    /// Bytes used (`used_memory`), summed over a cluster's nodes.
    pub used_memory: u64,
    /// `used_memory_human` of one server; on a cluster, the sum in MiB.
    pub used_memory_human: String,
    /// `maxmemory` (0: no limit), summed over a cluster's nodes.
    pub maxmemory: u64,
    /// Connected clients, summed over a cluster's nodes.
    pub connected_clients: u64,
    /// Seconds since the server (the longest running node) started.
    pub uptime_seconds: u64,
}

impl Admin {
    /// Totals over every known queue, the live processes, and the Redis server.
    pub async fn overview(&self) -> Result<Overview> {
        let queues = self.queue_infos().await?;
        let processes = self.processes().await?.len();
        let now_ms = self.redis_time().await?;
        let sum = |f: fn(&super::QueueInfo) -> u64| queues.iter().map(f).sum::<u64>();
        Ok(Overview {
            processed: sum(|q| q.processed),
            failed: sum(|q| q.failed),
            enqueued: sum(|q| q.size),
            busy: sum(|q| q.busy),
            scheduled: sum(|q| q.scheduled),
            retries: sum(|q| q.retries),
            dead: sum(|q| q.dead),
            processes,
            queues: queues.len(),
            broken_queues: queues
                .iter()
                .filter(|q| q.broken.is_some())
                .map(|q| q.name.clone())
                .collect(),
            broken_keys: self.broken_keys().await?,
            now_ms,
            redis: self.redis_info().await?,
        })
    }

    /// The global keys (not of one queue) that hold what Gator did not write there, with the
    /// reason: one `TYPE` each, in one pipeline (`crate::store::broken`).
    pub async fn broken_keys(&self) -> Result<Vec<BrokenKey>> {
        crate::store::broken::check(&mut self.connection(), self.keys()).await
    }

    /// What `INFO` says of the server; on a cluster, of every node, summed.
    pub async fn redis_info(&self) -> Result<RedisInfo> {
        let sections = ["server", "memory", "clients"];
        let texts = crate::store::server::info(&mut self.connection(), &sections).await?;
        let mut info = RedisInfo {
            mode: if self.client.is_cluster() {
                "cluster"
            } else {
                "standalone"
            }
            .to_owned(),
            ..RedisInfo::default()
        };
        let server = texts
            .first()
            .map(|text| crate::store::server::Server::from_info(text))
            .unwrap_or_default();
        (info.server, info.version) = (server.name, server.version);
        for text in &texts {
            for line in text.lines() {
                let Some((name, value)) = line.trim().split_once(':') else {
                    continue;
                };
                let number = || value.parse::<u64>().unwrap_or(0);
                match name {
                    "used_memory" => info.used_memory += number(),
                    "used_memory_human" => info.used_memory_human = value.to_owned(),
                    "maxmemory" => info.maxmemory += number(),
                    "connected_clients" => info.connected_clients += number(),
                    "uptime_in_seconds" => info.uptime_seconds = info.uptime_seconds.max(number()),
                    _ => {}
                }
            }
        }
        if texts.len() > 1 {
            info.used_memory_human = format!("{:.2}M", info.used_memory as f64 / 1048576.0);
        }
        Ok(info)
    }
}
