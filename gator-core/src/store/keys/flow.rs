//! The keys of flow control ([`crate::flow`]): a controlled queue's settings, its parked
//! jobs by parking key, its units, its rate limiters, and the shared limiters'.

use super::Keys;
use super::kinds::*;

impl Keys {
    /// SET of the queues that are controlled (see [`crate::flow`]): workers fetch from them
    /// with `admit.lua` (global; written before the queue's own `flow` hash).
    pub fn flow_queues(&self) -> String {
        self.global(&FLOW_QUEUES, "")
    }

    /// HASH of `queue`'s flow settings; its existence makes the queue controlled.
    pub fn flow(&self, queue: &str) -> String {
        self.of_queue(queue, &FLOW, "")
    }

    /// ZSET of the jobs of a controlled `queue` parked under parking key `key` (a limit key,
    /// then `\x1f` and a rate limiter's name if the jobs name one, then `\x1e` and an overlap
    /// key if they have one), by priority score.
    pub fn held(&self, queue: &str, key: &str) -> String {
        self.of_queue(queue, &HELD, key)
    }

    /// ZSET of the parked critical jobs of `queue`, by priority score.
    pub fn critical(&self, queue: &str) -> String {
        self.of_queue(queue, &CRITICAL, "")
    }

    /// ZSET parking key → score of its head job: the keys whose jobs may start now.
    pub fn ready(&self, queue: &str) -> String {
        self.of_queue(queue, &READY, "")
    }

    /// SET of parking keys waiting for one of their limit key's units.
    pub fn blocked(&self, queue: &str) -> String {
        self.of_queue(queue, &BLOCKED, "")
    }

    /// ZSET parking key → when its rate limiter lets its head job start (ms, Redis time).
    pub fn timed(&self, queue: &str) -> String {
        self.of_queue(queue, &TIMED, "")
    }

    /// ZSET fair key → the virtual finish tag of its last job parked, for the fair keys with
    /// jobs placed ahead of the queue's virtual time (`fair_v` in its flow hash).
    pub fn fair(&self, queue: &str) -> String {
        self.of_queue(queue, &FAIR, "")
    }

    /// HASH of the no-overlap locks of `queue`: overlap key → jid of the job that holds it
    /// (see [`crate::flow::overlap`]).
    pub fn overlap(&self, queue: &str) -> String {
        self.of_queue(queue, &OVERLAP, "")
    }

    /// SET of the parking keys of `queue` waiting for overlap key `key`'s lock.
    pub fn overlap_wait(&self, queue: &str, key: &str) -> String {
        self.of_queue(queue, &OVERLAP_WAIT, key)
    }

    /// HASH of the units in use in `queue`: `!total`, and `k:<limit key>` per key.
    pub fn used(&self, queue: &str) -> String {
        self.of_queue(queue, &USED, "")
    }

    /// HASH of the units process `process` holds in `queue`: payload → `key\ncost\ncount`.
    pub fn units(&self, queue: &str, process: &str) -> String {
        self.of_queue(queue, &UNITS, process)
    }

    /// STRING counter giving parked jobs their place among equals.
    pub fn seq(&self, queue: &str) -> String {
        self.of_queue(queue, &SEQ, "")
    }

    /// LIST of wake-up tokens for workers waiting on a controlled `queue` (at most 16).
    pub fn signal(&self, queue: &str) -> String {
        self.of_queue(queue, &SIGNAL, "")
    }

    /// LIST of the jobs that were on `queue`'s list when it became controlled, parked a
    /// thousand at a time by `admit.lua`.
    pub fn backlog(&self, queue: &str) -> String {
        self.of_queue(queue, &BACKLOG, "")
    }

    /// STRING: rate limiter `name`'s theoretical arrival time (ms, Redis time); `name` is
    /// empty for the queue's own limiter.
    pub fn tat(&self, queue: &str, name: &str) -> String {
        self.of_queue(queue, &TAT, name)
    }

    /// STRING: shared rate limiter `name`'s rate (`count interval_ms burst`). A shared limiter
    /// is obeyed by every queue whose jobs name it and that sets no limiter of that name of its
    /// own; its keys carry its own hash tag `{<name>}`, so on a cluster they live on one node,
    /// usually not their queues' (see `limiter_take.lua`).
    pub fn limiter_rate(&self, name: &str) -> String {
        format!(
            "{}:limiter:{{{name}}}:{}",
            self.namespace, LIMITER_RATE.suffix
        )
    }

    /// STRING: shared rate limiter `name`'s theoretical arrival time (ms, its node's Redis time).
    pub fn limiter_tat(&self, name: &str) -> String {
        format!(
            "{}:limiter:{{{name}}}:{}",
            self.namespace, LIMITER_TAT.suffix
        )
    }

    /// SET of the shared rate limiters' names (global; for listings).
    pub fn limiters(&self) -> String {
        self.global(&LIMITERS, "")
    }
}
