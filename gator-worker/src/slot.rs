//! A job this process holds and the slot it takes (and the count of fetches under way, which
//! shutdown waits on): a process holds at most `--concurrency`
//! jobs, each with its slot from the moment it is fetched until its outcome is written (see
//! [`crate::fetcher`]).

use crate::door::Fetched;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;

/// A fetched job and the slot it holds until its outcome is written.
#[derive(Debug)]
pub struct Job {
    /// The job as fetched.
    pub fetched: Fetched,
    /// Its slot; clone it into whatever must hold the slot longer (a sync job's thread).
    pub slot: Slot,
    /// The generation of the names passed over when its fetch was sent
    /// ([`crate::queues::passing::Passing::generation`]).
    pub passing_seen: u64,
}

/// One of the `--concurrency` slots, given back when the last clone is dropped.
#[derive(Clone)]
pub struct Slot(Arc<OwnedSemaphorePermit>);

impl Job {
    /// `fetched`, holding `slot` until its outcome is written.
    pub(crate) fn new(fetched: Fetched, slot: OwnedSemaphorePermit, passing_seen: u64) -> Job {
        Job {
            fetched,
            slot: Slot(Arc::new(slot)),
            passing_seen,
        }
    }

    /// What one fetch for one slot found (held already), holding the slot; or the slot back,
    /// if it found nothing. A success that took its processor's next job in its own round
    /// trip ([`crate::settle`]) hands it over the same way.
    pub(crate) fn first_of(
        jobs: Vec<Fetched>,
        slot: OwnedSemaphorePermit,
        passing_seen: u64,
    ) -> Result<Job, OwnedSemaphorePermit> {
        // A fetch asks for one job: none is left over. (Were one, it would stay in flight,
        // unheld, and recovery would put it back.)
        match jobs.into_iter().next() {
            Some(fetched) => Ok(Job::new(fetched, slot, passing_seen)),
            None => Err(slot),
        }
    }
}

impl Slot {
    /// The slot itself, unless a sync body's thread still shares it.
    pub(crate) fn into_own(self) -> Result<OwnedSemaphorePermit, Slot> {
        Arc::try_unwrap(self.0).map_err(Slot)
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Slot")
    }
}

/// Counts one fetch in flight until dropped ([`crate::fetcher::Fetcher::fetch_guard`]).
pub(crate) struct FetchGuard<'a>(pub(crate) &'a std::sync::atomic::AtomicUsize);

impl Drop for FetchGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}
