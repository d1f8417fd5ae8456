//! Every Redis key name Gator uses, and nowhere else.
//!
//! Layout: `<namespace>:<kind>` for the few global keys and `<namespace>:{<queue>}:<kind>` for
//! everything that belongs to one queue. The braces are a Redis Cluster hash tag: all keys of
//! one queue hash to one slot, so every script that touches one queue runs on one node. Global
//! keys are never touched inside a per-queue script. `docs/wire-format.md` documents each key;
//! a unit test checks that every key kind below is named there.

mod flow;
pub mod kinds;
mod replies;

use crate::error::{Error, Result};
use kinds::*;

/// The default namespace, the first segment of every key.
pub const DEFAULT_NAMESPACE: &str = "gator";

/// Builds key names under one namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    namespace: String,
}

impl Default for Keys {
    fn default() -> Self {
        Keys {
            namespace: DEFAULT_NAMESPACE.to_owned(),
        }
    }
}

impl Keys {
    /// Keys under `namespace`; refuses one with braces or spaces, which would break the layout.
    pub fn new(namespace: &str) -> Result<Keys> {
        let ok = !namespace.is_empty()
            && namespace.len() <= 64
            && namespace
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b));
        if !ok {
            return Err(Error::InvalidNamespace {
                name: namespace.to_owned(),
            });
        }
        Ok(Keys {
            namespace: namespace.to_owned(),
        })
    }

    /// The namespace these keys live under.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `<namespace>:{replies}:<kind><suffix>`: the replies' keys, all under one hash tag, so
    /// that a reply finds its waiting job in one script whatever queue it came from.
    fn of_replies(&self, kind: &Kind, name: &str) -> String {
        format!("{}:{{replies}}:{}{name}", self.namespace, kind.suffix)
    }

    /// `<namespace>:{catalogue}:<suffix><name>`: the job catalogue's keys, under one hash tag,
    /// so one script reads or writes any of its jobs.
    fn of_catalogue(&self, kind: &Kind, name: &str) -> String {
        format!("{}:{{catalogue}}:{}{name}", self.namespace, kind.suffix)
    }

    /// HASH job name → its definition (JSON), in the job catalogue (`catalogue`).
    pub fn catalogue_jobs(&self) -> String {
        self.of_catalogue(&CATALOGUE_JOBS, "")
    }

    /// HASH job name → `<worker> <lease end, ms>`: who may write the name's definition.
    pub fn catalogue_writers(&self) -> String {
        self.of_catalogue(&CATALOGUE_WRITERS, "")
    }

    /// The prefix of the HASHes, one per job name, of the workers that run it: worker →
    /// `<lease end, ms> <queues served>`.
    pub fn catalogue_runners_prefix(&self) -> String {
        self.of_catalogue(&CATALOGUE_RUNNERS, "")
    }

    /// `<namespace>:<suffix><name>`: a key of the whole namespace.
    fn global(&self, kind: &Kind, name: &str) -> String {
        format!("{}:{}{name}", self.namespace, kind.suffix)
    }

    /// The key of `kind` if it is one fixed key of the namespace (a global, catalogue or replies
    /// kind that takes no name): what `store::broken::check` reads the type of.
    pub(crate) fn fixed(&self, kind: &Kind) -> Option<String> {
        if kind.is_named() {
            return None;
        }
        match kind.scope {
            Scope::Global => Some(self.global(kind, "")),
            Scope::Catalogue => Some(self.of_catalogue(kind, "")),
            Scope::Replies => Some(self.of_replies(kind, "")),
            Scope::Queue | Scope::Limiter => None,
        }
    }

    /// SET of every queue name a job was ever dispatched to (global).
    pub fn queues(&self) -> String {
        self.global(&QUEUES, "")
    }

    /// ZSET of live worker process ids, scored by when their registration expires (ms, Redis
    /// time); expired members are pruned by every heartbeat (global).
    pub fn processes(&self) -> String {
        self.global(&PROCESSES, "")
    }

    /// STRING (JSON) describing one live worker process; expires unless its heartbeat renews it
    /// (global).
    pub fn process(&self, id: &str) -> String {
        self.global(&PROCESS, id)
    }

    /// HASH queue name → number of shards, for the queues split into shards (global; see
    /// `shards`).
    pub fn shards(&self) -> String {
        self.global(&SHARDS, "")
    }

    /// HASH periodic entry name → the queue its definition lives in (global; see
    /// `cron`): the index every worker's cron loop reads. Written before the entry
    /// and removed after it, each by a command of its own.
    pub fn cron_index(&self) -> String {
        self.global(&CRON_INDEX, "")
    }

    /// HASH periodic entry name → its definition (JSON: cron, tz, job payload, source), for
    /// the entries whose jobs go to `queue`.
    pub fn cron_entries(&self, queue: &str) -> String {
        self.of_queue(queue, &CRON_ENTRIES, "")
    }

    /// HASH periodic entry name → the last tick fired (ms since the epoch, Redis time; at first
    /// the time the entry was added, so that no earlier tick fires). `cron_fire.lua` compares
    /// and sets it with the push: one enqueue per tick across every worker.
    pub fn cron_fired(&self, queue: &str) -> String {
        self.of_queue(queue, &CRON_FIRED, "")
    }

    /// HASH periodic entry name → when it was paused (ms, Redis time), for the paused entries
    /// of `queue`.
    pub fn cron_paused(&self, queue: &str) -> String {
        self.of_queue(queue, &CRON_PAUSED, "")
    }

    /// LIST of the payloads waiting in `queue`: RPUSH to enqueue, pop from the left.
    pub fn queue(&self, queue: &str) -> String {
        self.of_queue(queue, &QUEUE, "")
    }

    /// LIST of the payloads of `queue` that worker process `process` has fetched and not yet
    /// settled: a fetch moves a job here and its outcome takes it out, atomically, so a job is
    /// never only in a dying process's memory.
    pub fn inflight(&self, queue: &str, process: &str) -> String {
        self.of_queue(queue, &INFLIGHT, process)
    }

    /// The in-flight key of `queue` without its process id: `recover.lua` appends the ids it
    /// finds in [`Keys::leases`] (same hash tag, so the same slot).
    pub fn inflight_prefix(&self, queue: &str) -> String {
        self.of_queue(queue, &INFLIGHT, "")
    }

    /// ZSET of the worker processes that may hold in-flight jobs of `queue`, scored by when
    /// their lease expires (ms, Redis time): the in-flight index of the queue. A process is
    /// added before its first fetch and removed only once its in-flight list is empty.
    pub fn leases(&self, queue: &str) -> String {
        self.of_queue(queue, &LEASES, "")
    }

    /// ZSET of payloads of `queue` to run later, scored by due time in ms since the epoch.
    pub fn scheduled(&self, queue: &str) -> String {
        self.of_queue(queue, &SCHEDULED, "")
    }

    /// ZSET of the minutes that hold jobs of `queue` due beyond the horizon (`store::later`),
    /// member and score the minute's start (ms since the epoch).
    pub fn later(&self, queue: &str) -> String {
        self.of_queue(queue, &LATER, "")
    }

    /// LIST of the jobs of `queue` due in the minute that starts at `start` (ms), beyond the
    /// horizon when they were scheduled: `<due - start>|<payload>` each, in the order written.
    pub fn later_slice(&self, queue: &str, start: u64) -> String {
        self.of_queue(queue, &LATER_SLICE, &start.to_string())
    }

    /// STRING: how many jobs of `queue` the minutes' lists hold ([`Keys::later_slice`]).
    pub fn later_count(&self, queue: &str) -> String {
        self.of_queue(queue, &LATER_COUNT, "")
    }

    /// STRING: the lock of unique key `digest` (its SHA-1 hex, [`crate::unique::digest`]) on
    /// `queue`, holding the jid of the job that holds it (for a debounced job, its pending
    /// payload), expiring after its TTL. The scripts build it from the payload's `unique.key`.
    pub fn unique(&self, queue: &str, digest: &str) -> String {
        self.of_queue(queue, &UNIQUE, digest)
    }

    /// ZSET of failed payloads of `queue` waiting for their next attempt, scored by its time (ms).
    pub fn retry(&self, queue: &str) -> String {
        self.of_queue(queue, &RETRY, "")
    }

    /// LIST of the steps of chain `chain_id` still waiting to run, in order. Lives under the
    /// hash tag of the chain's first queue.
    pub fn chain(&self, queue: &str, chain_id: &str) -> String {
        self.of_queue(queue, &CHAIN, chain_id)
    }

    /// LIST of hand-offs recorded by successes of chain steps of `queue` whose next step is
    /// still to be moved to its queue (each a chain link as JSON).
    pub fn outbox(&self, queue: &str) -> String {
        self.of_queue(queue, &OUTBOX, "")
    }

    /// HASH jid → payload of chain steps taken off the lists of chains whose first queue is
    /// `queue`, not yet on their own queue.
    pub fn handoff(&self, queue: &str) -> String {
        self.of_queue(queue, &HANDOFF, "")
    }

    /// STRING set when chain step `jid` was pushed to `queue`, so a repeated hand-off is a
    /// no-op; expires after an hour.
    pub fn handed(&self, queue: &str, jid: &str) -> String {
        self.of_queue(queue, &HANDED, jid)
    }

    /// STRING: the outbox relay pushed job `jid` to `queue` (one job per row; an hour).
    pub fn relayed(&self, queue: &str, jid: &str) -> String {
        self.of_queue(queue, &RELAYED, jid)
    }

    /// HASH of the outbox relays' reports, by relay ([`crate::outbox::Report`]; global).
    pub fn relays(&self) -> String {
        self.global(&RELAYS, "")
    }

    /// HASH of workflow `uuid`'s state (its steps, their states and results, see
    /// `lua/wf_lib.lua`), under the hash tag of its home queue (its first step's).
    pub fn workflow(&self, home: &str, uuid: &str) -> String {
        self.of_queue(home, &WORKFLOW, uuid)
    }

    /// HASH jid → payload of workflow `uuid`'s steps released and not yet on their queues.
    pub fn workflow_push(&self, home: &str, uuid: &str) -> String {
        self.of_queue(home, &WORKFLOW_PUSH, uuid)
    }

    /// SET of the ids of the workflows homed on `home` with steps to push: what recovery
    /// finishes if the process that released them died first.
    pub fn workflows_pushing(&self, home: &str) -> String {
        self.of_queue(home, &WORKFLOWS_PUSHING, "")
    }

    /// SET of the jids of `queue` whose cancellation was asked for while they ran (or, on a
    /// controlled queue, while they were parked): every worker reads it each
    /// `CANCEL_POLL` and stops them; a job leaves it when its cancellation is settled.
    pub fn cancelling(&self, queue: &str) -> String {
        self.of_queue(queue, &CANCELLING, "")
    }

    /// HASH of `queue`'s all-time counters: `processed` (attempts that ended, whatever their
    /// outcome) and `failed` (attempts that failed), as Sidekiq counts them. Written by each
    /// worker once a second (`store::stats`).
    pub fn stats(&self, queue: &str) -> String {
        self.of_queue(queue, &STATS, "")
    }

    /// HASH of `queue`'s per-minute counters of day `day` (days since the epoch, UTC, Redis
    /// time): fields `<minute of the day>:p` (processed) and `:f` (failed); expires two days
    /// after its last write.
    pub fn history_minutes(&self, queue: &str, day: u64) -> String {
        self.of_queue(queue, &HISTORY_MINUTES, &day.to_string())
    }

    /// HASH of `queue`'s per-hour counters of day `day`: fields `<hour of the day>:p` and
    /// `:f`; expires sixteen days after its last write.
    pub fn history_hours(&self, queue: &str, day: u64) -> String {
        self.of_queue(queue, &HISTORY_HOURS, &day.to_string())
    }

    /// ZSET of the ids of the chains whose first queue is `queue`, scored by their dispatch
    /// (ms): the index the dashboard lists chains in flight from. Capped at the newest
    /// `journeys::INDEX_CAP`; ids of finished chains are pruned as it is read.
    pub fn chains_index(&self, queue: &str) -> String {
        self.of_queue(queue, &CHAINS_INDEX, "")
    }

    /// ZSET of the uuids of the workflows homed on `queue`, scored by their dispatch (ms), as
    /// [`Keys::chains_index`] is for chains.
    pub fn workflows_index(&self, queue: &str) -> String {
        self.of_queue(queue, &WORKFLOWS_INDEX, "")
    }

    /// ZSET of payloads of `queue` that will not be retried, scored by time of death (ms).
    pub fn dead(&self, queue: &str) -> String {
        self.of_queue(queue, &DEAD, "")
    }

    /// `<namespace>:{<queue>}:job:<jid>` (STRING): the job's status record, the index
    /// `Client::status` reads (see `store::status`).
    pub fn job(&self, queue: &str, jid: &str) -> String {
        self.of_queue(queue, &JOB, jid)
    }

    /// `<namespace>:{<queue>}:progress:<jid>` (STRING): the job's last reported progress,
    /// `<fraction> <at ms> <attempt> <note>` (see `store::progress`).
    pub fn progress(&self, queue: &str, jid: &str) -> String {
        self.of_queue(queue, &PROGRESS, jid)
    }

    /// `<namespace>:{<queue>}:payload:<jid>` (STRING): the arguments of a job stored aside
    /// (`payload::aside`), in the slot of its queue.
    pub fn payload(&self, queue: &str, jid: &str) -> String {
        self.of_queue(queue, &PAYLOAD, jid)
    }

    /// `<namespace>:{<queue>}:finished` (LIST): the jids of the queue's finished jobs whose
    /// records are kept, newest first, so that the oldest go once there are too many (see
    /// `store::finished`).
    pub fn finished(&self, queue: &str) -> String {
        self.of_queue(queue, &FINISHED, "")
    }

    /// `<namespace>:{<queue>}:queued:<bucket>` (HASH) and the field that marks `jid` queued
    /// there, if `jid` is a UUIDv7 (see `wire::jid`): the plain path's record of a queued job.
    pub fn queued_mark<'j>(&self, queue: &str, jid: &'j str) -> Option<(String, &'j str)> {
        let (bucket, field) = crate::wire::jid::mark_of(jid)?;
        Some((self.queued_bucket(queue, bucket), field))
    }

    /// `<namespace>:{<queue>}:queued:<bucket>`, for a bucket named by `wire::jid::mark_of`.
    pub fn queued_bucket(&self, queue: &str, bucket: &str) -> String {
        self.of_queue(queue, &QUEUED, bucket)
    }

    /// `<namespace>:{<queue>}:<kind><suffix>`, built without `format!`: the worker builds a few
    /// keys per job, and the formatting machinery cost more than the rest of a settle.
    fn of_queue(&self, queue: &str, kind: &Kind, name: &str) -> String {
        let parts = [
            self.namespace.as_str(),
            ":{",
            queue,
            "}:",
            kind.suffix,
            name,
        ];
        let mut key = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        for part in parts {
            key.push_str(part);
        }
        key
    }
}

/// Checks that `name` can be a queue ([`gator_rules::queue_name`]): it becomes a hash tag, so
/// no braces, and no colons or spaces so keys stay readable and parseable by other tools.
pub fn validate_queue(name: &str) -> Result<()> {
    gator_rules::queue_name(name).map_err(|reason| Error::InvalidQueueName {
        name: crate::error::cut_name(name),
        reason,
    })
}

/// Checks that `name` is a queue or one shard of a queue (`default#3`, see `shards`):
/// what the known-queues set and the admin commands accept.
pub fn validate_stored_queue(name: &str) -> Result<()> {
    let logical = crate::wire::shards::logical_queue(name);
    validate_queue(logical).map_err(|e| match e {
        Error::InvalidQueueName { reason, .. } => Error::InvalidQueueName {
            name: crate::error::cut_name(name),
            reason,
        },
        other => other,
    })
}

#[cfg(test)]
mod tests;
