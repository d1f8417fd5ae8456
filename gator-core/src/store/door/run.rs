//! [`Run`]: what a job reads and records around its run that is not its outcome.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::{aside, cancel, durable, progress, status, workflow};
use crate::transport::connection::Connection;
use crate::wire::durable::Stored;
use std::collections::HashSet;

/// Reads a job needs before it runs (its payload set aside, its workflow parents' results),
/// and what it records while it runs (its running record, its progress), and the cancel marks
/// of the queues a process runs. None of it settles the job: that is [`super::Settle`]'s.
/// Holds the shared connection and the key names. For the worker's processor, progress and
/// cancellation.
pub struct Run<'a> {
    conn: Connection,
    keys: &'a Keys,
}

impl<'a> Run<'a> {
    /// A handle on a client's shared connection `conn`, under `keys`.
    pub fn new(conn: Connection, keys: &'a Keys) -> Self {
        Run { conn, keys }
    }

    /// The payload that job `jid` of `queue` set aside (too large to travel in its queue), if
    /// it is still there.
    pub async fn aside(&mut self, queue: &str, jid: &str) -> Result<Option<Vec<u8>>> {
        aside::get(&mut self.conn, self.keys, queue, jid).await
    }

    /// Workflow `id`'s `parents`: each one's `(result, end)` as its workflow recorded them.
    pub async fn parents(
        &mut self,
        id: &str,
        parents: &[String],
    ) -> Result<Vec<(Option<String>, Option<String>)>> {
        workflow::parents(&mut self.conn, self.keys, id, parents).await
    }

    /// Records job `jid` of `queue` running in `process` since `since_ms` (Redis time), as
    /// attempt `attempt`.
    pub async fn mark_running(
        &mut self,
        (queue, jid): (&str, &str),
        process: &str,
        attempt: u32,
        since_ms: u64,
    ) -> Result<()> {
        let keys = self.keys;
        status::mark_running(&mut self.conn, keys, queue, jid, process, attempt, since_ms).await
    }

    /// Records job `jid`'s progress `(percent, step, message)`; its sequence number.
    pub async fn write_progress(
        &mut self,
        (queue, jid): (&str, &str),
        report: (f64, u32, &str),
    ) -> Result<u64> {
        progress::write(&mut self.conn, self.keys, queue, jid, report).await
    }

    /// Saves a running durable job's state: its payload `was` in `process`'s in-flight list
    /// of `queue` becomes `now`, if the process still holds its lease (`durable_save.lua`).
    pub async fn save_durable(
        &mut self,
        (queue, process): (&str, &str),
        was: &str,
        now: &str,
    ) -> Result<Stored> {
        durable::save(&mut self.conn, self.keys, (queue, process), was, now).await
    }

    /// The jids marked to cancel in `queues`.
    pub async fn marked_cancelled(&mut self, queues: &[String]) -> Result<HashSet<String>> {
        cancel::marked(&mut self.conn, self.keys, queues).await
    }
}
