//! The worker processes of the fleet and the jobs each one is running.

use super::Admin;
use crate::error::Result;
use crate::store::processes::{self as store_processes, Description};
use crate::store::status::{self, JobStatus};
use serde::Serialize;
use std::collections::HashMap;
use std::time::UNIX_EPOCH;

/// A live worker process, as its heartbeat describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProcessInfo {
    /// Its id: `<host>:<pid>:<nonce>`, or `<worker id>:<nonce>`.
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// Its pid on that host.
    pub pid: u32,
    /// Its `--worker-id`, if it was given one.
    pub worker_id: Option<String>,
    /// The queues it works, as `--queues` gave them (`high:3,default:1`).
    pub queues: String,
    /// Jobs it may run at once.
    pub concurrency: u32,
    /// When it started (ms, Redis time).
    pub started_at_ms: u64,
    /// How long ago its last heartbeat was (ms); it beats every quarter of its lease.
    pub heartbeat_age_ms: u64,
    /// Jobs it holds: fetched and not settled yet.
    pub busy: usize,
    /// `busy / concurrency`, 0 to 1.
    pub utilization: f64,
    /// The jobs it holds, oldest start first.
    pub jobs: Vec<RunningJob>,
}

/// A job a process holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunningJob {
    /// Its jid.
    pub jid: String,
    /// Its wire name.
    pub job: String,
    /// Its queue.
    pub queue: String,
    /// The attempt running (1 for the first run).
    pub attempt: u32,
    /// When it started (ms), once its status record says so: a worker records the start of a
    /// job that has run for a moment, not of every short one.
    pub started_at_ms: Option<u64>,
    /// How long it has run so far (ms), when its start is known.
    pub running_for_ms: Option<u64>,
    /// Its arguments, cut to a preview if they are large ([`super::preview::args`]).
    pub args: serde_json::Value,
}

impl Admin {
    /// Every live worker process with the jobs it is running, sorted by id. A process that
    /// stopped without deregistering shows until its registration expires (one lease).
    pub async fn processes(&self) -> Result<Vec<ProcessInfo>> {
        let (keys, mut conn) = (self.keys(), self.connection());
        let now = self.redis_time().await?;
        let registered = store_processes::live(&mut conn, keys, now).await?;
        if registered.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = registered.iter().map(|(id, _)| id.as_str()).collect();
        let described = store_processes::descriptions(&mut conn, keys, &ids).await?;
        // Which queues each process may hold jobs of: the lease index of every known queue.
        let queues = self.known_queues().await?;
        let holders = store_processes::lease_holders(&mut conn, keys, &queues).await?;
        let mut held: HashMap<&str, Vec<&str>> = HashMap::new();
        for (queue, processes) in queues.iter().zip(&holders) {
            for process in processes {
                held.entry(process.as_str()).or_default().push(queue);
            }
        }
        let mut infos = Vec::with_capacity(registered.len());
        for ((id, expires), text) in registered.iter().zip(described) {
            let Some(described) = text.and_then(|t| serde_json::from_str::<Description>(&t).ok())
            else {
                continue; // expired between the two reads
            };
            let beat_at = (*expires as u64).saturating_sub(described.lease_ms);
            let jobs = self
                .running(id, held.get(id.as_str()).map_or(&[][..], |q| q), now)
                .await?;
            let concurrency = described.concurrency.max(1);
            infos.push(ProcessInfo {
                id: id.clone(),
                host: described.host,
                pid: described.pid,
                worker_id: described.worker_id,
                queues: described.queues,
                concurrency: described.concurrency,
                started_at_ms: described.started_at,
                heartbeat_age_ms: now.saturating_sub(beat_at),
                busy: jobs.len(),
                utilization: (jobs.len() as f64 / f64::from(concurrency)).min(1.0),
                jobs,
            });
        }
        infos.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(infos)
    }

    /// The jobs in `process`'s in-flight lists of `queues`, with their starts from their
    /// status records.
    async fn running(&self, process: &str, queues: &[&str], now: u64) -> Result<Vec<RunningJob>> {
        let (keys, mut conn) = (self.keys(), self.connection());
        if queues.is_empty() {
            return Ok(Vec::new());
        }
        let lists = store_processes::in_flight(&mut conn, keys, process, queues).await?;
        let mut jobs = Vec::new();
        for (queue, list) in queues.iter().zip(lists) {
            for raw in list {
                let doc: serde_json::Value = serde_json::from_str(&raw).unwrap_or_default();
                let text = |field: &str| doc.get(field).and_then(|v| v.as_str()).unwrap_or("");
                jobs.push(RunningJob {
                    jid: text("jid").to_owned(),
                    job: text("job").to_owned(),
                    queue: (*queue).to_owned(),
                    attempt: doc
                        .get("attempt")
                        .and_then(|v| v.as_u64())
                        .map_or(1, |a| a as u32 + 1),
                    started_at_ms: None,
                    running_for_ms: None,
                    args: super::preview::args(doc.get("args").cloned().unwrap_or_default()),
                });
            }
        }
        let wanted: Vec<(String, String)> = jobs
            .iter()
            .map(|j| (j.queue.clone(), j.jid.clone()))
            .collect();
        let records = status::read_many(&mut conn, keys, &wanted).await?;
        for (job, record) in jobs.iter_mut().zip(records) {
            if let Some(JobStatus::Running { since, .. }) = record.map(|r| r.status) {
                let since = since
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                job.started_at_ms = Some(since);
                job.running_for_ms = Some(now.saturating_sub(since));
            }
        }
        jobs.sort_by_key(|j| j.started_at_ms.unwrap_or(u64::MAX));
        Ok(jobs)
    }
}
