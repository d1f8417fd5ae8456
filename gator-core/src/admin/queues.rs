//! One row per queue: what waits, what runs, what failed, and its flow controls.

use super::Admin;
use crate::connection::Connection;
use crate::error::Result;
use crate::store::keys::{Keys, validate_stored_queue};
use crate::store::{flow, stats};
use serde::Serialize;

/// What [`Admin::queue_infos`] shows of one queue (or shard).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueInfo {
    /// The queue (a shard is its own row: `default#3`).
    pub name: String,
    /// Jobs waiting to start: its list, or on a controlled queue every parked job.
    pub size: u64,
    /// The age of the oldest waiting job, in ms (`None` when nothing waits).
    pub latency_ms: Option<u64>,
    /// Jobs fetched by a worker and not settled yet.
    pub busy: u64,
    /// Jobs scheduled to run later.
    pub scheduled: u64,
    /// Failed jobs waiting for their next attempt.
    pub retries: u64,
    /// Jobs in its dead set.
    pub dead: u64,
    /// Whether it is paused (`gator-worker queue pause`).
    pub paused: bool,
    /// Whether it is under flow control ([`crate::flow`]).
    pub controlled: bool,
    /// Waiting jobs held back by a limit, a rate, a share or a no-overlap lock (not ready).
    pub parked: u64,
    /// Its concurrency limit in units, if any.
    pub limit: Option<u32>,
    /// Units in use over the fleet (controlled queues).
    pub units_in_use: u64,
    /// Attempts that ended, all time.
    pub processed: u64,
    /// Attempts that failed, all time.
    pub failed: u64,
    /// Why it could not be read, if it could not: one of its keys holds what Gator did not
    /// write there (a key of the wrong type, written by hand or by another tool). Its numbers
    /// are then zeros; every other queue is read as usual.
    pub broken: Option<String>,
}

impl Admin {
    /// A [`QueueInfo`] for every known queue (and shard), sorted by name.
    pub async fn queue_infos(&self) -> Result<Vec<QueueInfo>> {
        let queues = self.known_queues().await?;
        self.infos_of(&queues).await
    }

    /// The [`QueueInfo`] of `queue` (its own row: shards are not summed).
    pub async fn queue_info(&self, queue: &str) -> Result<QueueInfo> {
        validate_stored_queue(queue)?;
        let mut infos = self.infos_of(&[queue.to_owned()]).await?;
        Ok(infos.pop().expect("one info per queue"))
    }

    /// Deletes every job waiting in `queue`; returns how many. On a plain queue the jobs go
    /// with their status records and unique locks, a chunk per atomic call
    /// (`clear_queue.lua`), up to what the list held when the call started: jobs pushed
    /// meanwhile may stay. On a controlled queue each parked job is cancelled
    /// ([`crate::client::Client::cancel`]), which settles it as a cancel does. Jobs running, scheduled,
    /// retrying or dead are left alone.
    pub async fn clear_queue(&self, queue: &str) -> Result<usize> {
        validate_stored_queue(queue)?;
        let mut conn = self.connection();
        let key = self.keys().queue(queue);
        let mut left: usize = match redis::cmd("LLEN").arg(&key).query_async(&mut conn).await {
            Ok(len) => len,
            Err(e) if crate::store::queue::is_wrong_type(&e) => {
                return self.cancel_parked(queue).await;
            }
            Err(e) => return Err(e.into()),
        };
        let mut cleared = 0;
        while left > 0 {
            let removed: i64 = crate::store::scripts::CLEAR_QUEUE
                .key(&key)
                .arg(left.min(CLEAR_CHUNK))
                .invoke_async(&mut conn)
                .await?;
            if removed < 0 {
                // It became controlled meanwhile: its jobs are parked now.
                return Ok(cleared + self.cancel_parked(queue).await?);
            }
            if removed == 0 {
                break;
            }
            cleared += removed as usize;
            left = left.saturating_sub(removed as usize);
        }
        Ok(cleared)
    }

    /// Cancels every job parked in controlled `queue`; returns how many were cancelled.
    async fn cancel_parked(&self, queue: &str) -> Result<usize> {
        let mut cancelled = 0;
        for jid in parked_jids(&mut self.connection(), self.keys(), queue).await? {
            if matches!(
                self.client.cancel(&jid).await?,
                crate::cancel::Cancellation::Removed | crate::cancel::Cancellation::Stopping
            ) {
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }

    /// One row per queue; a queue whose keys Redis refuses to read (a key of the wrong type,
    /// a value Gator did not write) is a row of its own saying why, and every other row is
    /// read as usual. Redis being away fails the whole call.
    async fn infos_of(&self, queues: &[String]) -> Result<Vec<QueueInfo>> {
        let mut conn = self.connection();
        let controlled = flow::controlled(&mut conn, self.keys()).await?;
        let now = self.redis_time().await?;
        let mut infos = Vec::with_capacity(queues.len());
        for queue in queues {
            let read = self.info_of(&mut conn, queue, controlled.contains(queue), now);
            infos.push(match read.await {
                Ok(info) => info,
                Err(e) if e.is_broken_data() => QueueInfo::broken_row(queue, &e),
                Err(e) => return Err(e),
            });
        }
        Ok(infos)
    }

    async fn info_of(
        &self,
        conn: &mut Connection,
        queue: &str,
        controlled: bool,
        now: u64,
    ) -> Result<QueueInfo> {
        let keys = self.keys();
        let total = stats::totals(conn, keys, &[queue.to_owned()]).await?;
        let mut info = QueueInfo::named(queue);
        (info.processed, info.failed) = total.first().map_or((0, 0), |t| (t.processed, t.failed));
        info.busy = busy(conn, keys, queue).await?;
        (info.scheduled, info.retries, info.dead) = redis::pipe()
            .zcard(keys.scheduled(queue))
            .zcard(keys.retry(queue))
            .zcard(keys.dead(queue))
            .query_async(conn)
            .await?;
        let oldest = if controlled {
            let flow = flow::status(conn, keys, queue).await?;
            info.controlled = flow.controlled;
            info.paused = flow.paused;
            info.limit = flow.limit;
            info.units_in_use = flow.units_in_use;
            info.parked = flow
                .parked
                .iter()
                .filter(|p| p.state != "ready")
                .map(|p| p.jobs)
                .sum();
            info.size = flow.parked.iter().map(|p| p.jobs).sum::<u64>()
                + flow.critical_waiting
                + flow.backlog;
            oldest_parked(conn, keys, queue).await?
        } else {
            let (len, head): (u64, Option<String>) = redis::pipe()
                .llen(keys.queue(queue))
                .lindex(keys.queue(queue), 0)
                .query_async(conn)
                .await?;
            info.size = len;
            head.as_deref().and_then(enqueued_at)
        };
        info.latency_ms = oldest.map(|at| now.saturating_sub(at));
        Ok(info)
    }
}

impl QueueInfo {
    /// A row of zeros for `queue`.
    fn named(queue: &str) -> QueueInfo {
        QueueInfo {
            name: queue.to_owned(),
            size: 0,
            latency_ms: None,
            busy: 0,
            scheduled: 0,
            retries: 0,
            dead: 0,
            paused: false,
            controlled: false,
            parked: 0,
            limit: None,
            units_in_use: 0,
            processed: 0,
            failed: 0,
            broken: None,
        }
    }

    /// The row of a queue that could not be read, saying why.
    fn broken_row(queue: &str, error: &crate::error::Error) -> QueueInfo {
        QueueInfo {
            broken: Some(error.to_string()),
            ..QueueInfo::named(queue)
        }
    }
}

/// How many jobs one `clear_queue.lua` call removes: short enough not to hold Redis up.
const CLEAR_CHUNK: usize = 1000;

/// The jids of every job parked in controlled `queue`: its backlog, critical set and parking
/// keys' sets.
async fn parked_jids(conn: &mut Connection, keys: &Keys, queue: &str) -> Result<Vec<String>> {
    let mut raws: Vec<String> = redis::cmd("LRANGE")
        .arg(keys.backlog(queue))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?;
    let mut parked = flow::zmembers(conn, &keys.critical(queue)).await?;
    for parking_key in flow::parking_keys(conn, keys, queue).await?.all() {
        parked.extend(flow::zmembers(conn, &keys.held(queue, parking_key)).await?);
    }
    raws.extend(
        parked
            .iter()
            .map(|member| flow::parked_payload(member).to_owned()),
    );
    Ok(raws
        .iter()
        .filter_map(|raw| crate::store::status::jid_of(raw.as_bytes()))
        .collect())
}

/// Jobs of `queue` in the in-flight lists of the processes in its lease index.
async fn busy(conn: &mut Connection, keys: &Keys, queue: &str) -> Result<u64> {
    let holders: Vec<String> = redis::cmd("ZRANGE")
        .arg(keys.leases(queue))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?;
    if holders.is_empty() {
        return Ok(0);
    }
    let mut pipe = redis::pipe();
    for process in &holders {
        pipe.llen(keys.inflight(queue, process));
    }
    let lens: Vec<u64> = pipe.query_async(conn).await?;
    Ok(lens.into_iter().sum())
}

/// The `enqueued_at` of the oldest job parked in controlled `queue`: the heads of its backlog,
/// its critical set and each parking key's set (one command each).
async fn oldest_parked(conn: &mut Connection, keys: &Keys, queue: &str) -> Result<Option<u64>> {
    let parking_keys = flow::parking_keys(conn, keys, queue).await?;
    let mut pipe = redis::pipe();
    pipe.lrange(keys.backlog(queue), 0, 0);
    pipe.zrange(keys.critical(queue), 0, 0);
    for parking_key in parking_keys.all() {
        pipe.zrange(keys.held(queue, parking_key), 0, 0);
    }
    let heads: Vec<Vec<String>> = pipe.query_async(conn).await?;
    let (backlog, parked) = heads
        .split_first()
        .map_or((&[][..], &[][..]), |(b, p)| (&b[..], p));
    Ok(backlog
        .iter()
        .map(String::as_str)
        .chain(
            parked
                .iter()
                .flatten()
                .map(|member| flow::parked_payload(member)),
        )
        .filter_map(enqueued_at)
        .min())
}

/// The `enqueued_at` of a stored payload, read as a worker reads it (the lenient document:
/// an integer or a float).
fn enqueued_at(raw: &str) -> Option<u64> {
    crate::payload::PayloadDocument::parse(raw.as_bytes())
        .ok()?
        .enqueued_at_ms()
}
