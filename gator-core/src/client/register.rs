//! What a client remembers and records around its writes: the known-queues set (written at
//! most once a minute per queue), the set of controlled queues, and the replicas a write must
//! reach.

use super::{Client, REGISTER_EVERY};
use crate::error::Result;
use crate::payload::Payload;
use crate::store;
use crate::transport::connection::Connection;
use std::collections::HashMap;
use std::time::Instant;

impl Client {
    /// Records the queues of `payloads` in the known-queues set if this client has not done so
    /// in the last [`REGISTER_EVERY`], as a command of its own (a global key).
    pub(crate) async fn register_if_due(&self, payloads: &[Payload]) -> Result<()> {
        self.register_controlled(payloads).await?;
        if !self.due_for_registering(payloads.iter().map(|p| p.queue.as_str())) {
            return Ok(());
        }
        let queues: Vec<String> = payloads.iter().map(|p| p.queue.clone()).collect();
        store::queue::register(&mut self.connection(), self.keys(), &queues).await?;
        self.note_registered(payloads);
        Ok(())
    }

    /// Records the queues of `payloads` that carry flow options in the global set of controlled
    /// queues, before a script makes them controlled (see [`store::flow::register`]).
    pub(crate) async fn register_controlled(&self, payloads: &[Payload]) -> Result<()> {
        let mut queues: Vec<&str> = payloads
            .iter()
            .filter(|p| p.flow.as_ref().is_some_and(|f| !f.is_empty()))
            .map(|p| p.queue.as_str())
            .collect();
        if queues.is_empty() {
            return Ok(());
        }
        queues.sort_unstable();
        queues.dedup();
        store::flow::register(&mut self.connection(), self.keys(), &queues).await
    }

    /// With [`ClientBuilder::wait_for_replicas`]: waits until the replicas have what `conn`
    /// just wrote to the lists of `queues`.
    pub(crate) async fn confirm_replicated(
        &self,
        conn: &mut Connection,
        queues: impl IntoIterator<Item = &str>,
    ) -> Result<()> {
        let Some(wait) = &self.inner.wait else {
            return Ok(());
        };
        let mut keys: Vec<String> = Vec::new();
        for queue in queues {
            let key = self.keys().queue(queue);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        crate::store::replicas::confirm(conn, wait, keys).await
    }

    pub(crate) fn note_registered(&self, payloads: &[Payload]) {
        let now = Instant::now();
        let mut registered = self
            .inner
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for p in payloads {
            registered.insert(p.queue.clone(), now);
        }
    }

    pub(crate) fn due_for_registering<'a>(
        &self,
        mut queues: impl Iterator<Item = &'a str>,
    ) -> bool {
        let registered = self
            .inner
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // One clock read, and one lookup per run of one queue: a bulk dispatch names its
        // queue once per job.
        let now = Instant::now();
        let mut last = None;
        queues.any(|q| {
            if last == Some(q) {
                return false;
            }
            last = Some(q);
            registered
                .get(q)
                .is_none_or(|at| now.duration_since(*at) >= REGISTER_EVERY)
        })
    }

    /// The known-queues set, sorted (`Admin::known_queues`).
    pub(crate) async fn known_queues(&self) -> Result<Vec<String>> {
        store::queue::known(&mut self.connection(), self.keys()).await
    }

    /// Every sharded queue and its number of shards.
    pub(crate) async fn shard_counts(&self) -> Result<HashMap<String, u32>> {
        store::shards::all(&mut self.connection(), self.keys()).await
    }
}
