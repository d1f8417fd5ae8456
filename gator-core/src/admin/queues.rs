//! One row per queue: what waits, what runs, what failed, and its flow controls.

use super::Admin;
use crate::error::Result;
use crate::store::keys::validate_stored_queue;
use crate::store::{fleet, flow, flow_status, queue, stats};
use crate::transport::connection::Connection;
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
    /// Jobs parked on a controlled queue, whatever their key's state (ready to start, or held
    /// back by a limit, a rate, a share or a no-overlap lock): the figure `queue show` totals
    /// (`store::flow_status::FlowStatus::parked_jobs`).
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

    /// The [`QueueInfo`] of `queue` (its own row: shards are not summed here; the scaling
    /// signal sums them, [`super::scaling`]).
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
        let (keys, mut conn) = (self.keys(), self.connection());
        let Some(mut left) = queue::list_len(&mut conn, keys, queue).await? else {
            return self.cancel_parked(queue).await;
        };
        let mut cleared = 0;
        while left > 0 {
            let removed = queue::clear_chunk(&mut conn, keys, queue, left.min(CLEAR_CHUNK)).await?;
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
        for jid in fleet::parked_jids(&mut self.connection(), self.keys(), queue).await? {
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
    pub(super) async fn infos_of(&self, queues: &[String]) -> Result<Vec<QueueInfo>> {
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
        info.busy = fleet::busy(conn, keys, queue).await?;
        (info.scheduled, info.retries, info.dead) = fleet::set_sizes(conn, keys, queue).await?;
        let oldest = if controlled {
            let flow = flow_status::status(conn, keys, queue).await?;
            info.controlled = flow.controlled;
            info.paused = flow.paused;
            info.limit = flow.limit;
            info.units_in_use = flow.units_in_use;
            info.parked = flow.parked_jobs();
            info.size = flow.parked_jobs() + flow.critical_waiting + flow.backlog;
            fleet::oldest_parked(conn, keys, queue).await?
        } else {
            let (len, head) = fleet::list_head(conn, keys, queue).await?;
            info.size = len;
            head.as_deref().and_then(fleet::enqueued_at)
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
