//! Every job this process received from a fetch and has not settled, by payload bytes (with a
//! count, should one payload be in flight twice). Recovery reads it: an in-flight job missing
//! here is stranded (its fetch's reply was lost), and is put back.

use crate::door::Fetched;
use rustc_hash::FxHashMap;
use std::sync::Mutex;

/// The jobs this process holds. (FxHash: two lookups per job of a payload's bytes, where
/// SipHash cost more than the rest of the bookkeeping.)
#[derive(Debug, Default)]
pub struct Held(Mutex<FxHashMap<Vec<u8>, usize>>);

impl Held {
    /// Records that a fetch handed these jobs to this process.
    pub fn hold(&self, jobs: &[Fetched]) {
        let mut held = self.lock();
        for job in jobs {
            *held.entry(job.raw.clone()).or_default() += 1;
        }
    }

    /// Records that `job` was settled (or left for recovery): it is no longer this process's
    /// to hold.
    pub fn settled(&self, job: &Fetched) {
        let mut held = self.lock();
        if let Some(count) = held.get_mut(&job.raw) {
            *count -= 1;
            if *count == 0 {
                held.remove(&job.raw);
            }
        }
    }

    /// Records that this process holds the in-flight payload `raw` (a durable job's payload
    /// as a save rewrites it: held before the save, so it is never stranded).
    pub fn hold_payload(&self, raw: &[u8]) {
        *self.lock().entry(raw.to_vec()).or_default() += 1;
    }

    /// Records that the in-flight payload `raw` is no longer this process's to hold (the
    /// payload a save replaced, or one it did not write).
    pub fn release_payload(&self, raw: &[u8]) {
        let mut held = self.lock();
        if let Some(count) = held.get_mut(raw) {
            *count -= 1;
            if *count == 0 {
                held.remove(raw);
            }
        }
    }

    /// Whether this process received the in-flight payload `raw` and has not settled it.
    pub fn holds(&self, raw: &[u8]) -> bool {
        self.lock().contains_key(raw)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FxHashMap<Vec<u8>, usize>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
