//! The keys of replies (`reply`): all under the one `{replies}` hash tag, so that a
//! reply finds its waiting job in one script whatever queue it came from.

use super::Keys;
use super::kinds::*;

impl Keys {
    /// HASH correlation key → the job waiting for its reply (its wait record, JSON).
    pub fn reply_waits(&self) -> String {
        self.of_replies(&REPLY_WAITS, "")
    }

    /// ZSET correlation key → when its wait times out (ms, Redis time).
    pub fn reply_deadlines(&self) -> String {
        self.of_replies(&REPLY_DEADLINES, "")
    }

    /// STRING: a reply to `key` that came before its wait, kept for the lookback window.
    pub fn reply_early(&self, key: &str) -> String {
        self.of_replies(&REPLY_EARLY, key)
    }

    /// STRING: set when a reply to `key` was delivered (its value the jid it went to), kept
    /// for the lookback window, so a later reply is known as a duplicate.
    pub fn reply_seen(&self, key: &str) -> String {
        self.of_replies(&REPLY_SEEN, key)
    }

    /// LIST of completions (a reply delivered, a wait timed out) still to carry to the waiting
    /// jobs' queues.
    pub fn reply_outbox(&self) -> String {
        self.of_replies(&REPLY_OUTBOX, "")
    }

    /// HASH of counters: `delivered`, `kept`, `duplicates`, `timeouts`.
    pub fn reply_stats(&self) -> String {
        self.of_replies(&REPLY_STATS, "")
    }
}
