//! [`Recovery`]: every put-back of jobs a process no longer runs, and the drains that finish
//! what a crash left half done.

use crate::error::Result;
use crate::store::fetched::Fetched;
use crate::store::keys::Keys;
use crate::store::lease::{self, Recovered};
use crate::store::{handoff, inflight, queue, reply, workflow};
use crate::transport::connection::Connection;
use crate::transport::replication::ReplicaWait;
use std::time::Duration;

/// Puts back what a dead (or stopping) process held and finishes interrupted hand-offs:
/// in-flight lists whose lease expired, an outbox's records, a workflow's pushes, the replies'
/// completions and expired waits. Every call is idempotent: running it twice, or at once in two
/// processes, moves each job once. Holds the shared connection, the key names and the replica
/// wait. For the worker's recovery and shutdown.
pub struct Recovery<'a> {
    conn: Connection,
    keys: &'a Keys,
    wait: Option<&'a ReplicaWait>,
}

impl<'a> Recovery<'a> {
    /// A handle on a client's shared connection `conn`, under `keys`, with the replica `wait`
    /// a hand-off needs.
    pub fn new(conn: Connection, keys: &'a Keys, wait: Option<&'a ReplicaWait>) -> Self {
        Recovery { conn, keys, wait }
    }

    /// Puts back in `queue` the in-flight jobs of every process whose lease on it expired
    /// (`recover.lua`), except `own`'s; `take_over`, `(prefix, spared)`, names the processes
    /// whose jobs go back even with a live lease (those of the prefix but the ones starting
    /// with `spared`). Lists idle for `forget_after` are forgotten.
    pub async fn recover(
        &mut self,
        (queue, own): (&str, &str),
        forget_after: Duration,
        take_over: Option<(&str, &str)>,
    ) -> Result<Recovered> {
        lease::recover(
            &mut self.conn,
            self.keys,
            queue,
            own,
            forget_after,
            take_over,
        )
        .await
    }

    /// Puts every job of `process`'s in-flight list of `queue` back at its head, and with
    /// `release` gives up the lease (`put_back.lua`); how many went back.
    pub async fn put_back(&mut self, queue: &str, process: &str, release: bool) -> Result<usize> {
        lease::put_back(&mut self.conn, self.keys, queue, process, release).await
    }

    /// The payloads in `process`'s in-flight list of `queue`, as stored.
    pub async fn in_flight(&mut self, queue: &str, process: &str) -> Result<Vec<Vec<u8>>> {
        inflight::list(&mut self.conn, self.keys, queue, process).await
    }

    /// Puts `job` back at the head of its queue if it is still in flight (`release.lua`).
    pub async fn release(&mut self, job: &Fetched) -> Result<bool> {
        inflight::release(&mut self.conn, self.keys, job).await
    }

    /// Finishes every hand-off waiting in `queue`'s outbox; how many it found.
    pub async fn drain_outbox(&mut self, queue: &str) -> Result<usize> {
        handoff::drain_outbox(&mut self.conn, self.keys, queue, self.wait).await
    }

    /// Finishes the pushes of released workflow steps that `queue`'s workflows recorded.
    pub async fn drain_pushing(&mut self, queue: &str) -> Result<usize> {
        workflow::drain_pushing(&mut self.conn, self.keys, queue, self.wait).await
    }

    /// Ends up to 100 waits for replies whose time ran out (`reply_expire.lua`).
    pub async fn expire_replies(&mut self) -> Result<usize> {
        reply::expire(&mut self.conn, self.keys).await
    }

    /// Carries every reply or timeout in the replies' outbox to its job's queue.
    pub async fn drain_replies(&mut self) -> Result<usize> {
        handoff::drain_replies(&mut self.conn, self.keys, self.wait).await
    }

    /// Every known queue (the known set).
    pub async fn known_queues(&mut self) -> Result<Vec<String>> {
        queue::known(&mut self.conn, self.keys).await
    }
}
