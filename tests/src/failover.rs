//! What the failover tests share (`tests/tests/failover.rs` on a cluster, `sentinel.rs` behind
//! sentinels): a log of the jobs that ran, a producer that goes on through errors, and the
//! check that every acknowledged dispatch ran.

use crate::wait_until;
use std::collections::HashSet;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The ids of the jobs that ran, for a `static` a job records into.
#[derive(Debug)]
pub struct RunLog(Mutex<Option<HashSet<u64>>>);

impl RunLog {
    /// An empty log.
    pub const fn new() -> RunLog {
        RunLog(Mutex::new(None))
    }

    /// Records that job `id` ran.
    pub fn record(&self, id: u64) {
        self.lock().get_or_insert_with(HashSet::new).insert(id);
    }

    /// The ids recorded so far.
    pub fn ran(&self) -> HashSet<u64> {
        self.lock().clone().unwrap_or_default()
    }

    /// Waits until nothing more has run for 1.5 s (lost jobs never will); returns the ids of
    /// `acked` that did not run.
    pub async fn lost_of(&self, acked: &[u64]) -> Vec<u64> {
        wait_until("the jobs to run", Duration::from_secs(60), || async {
            let before = self.ran().len();
            tokio::time::sleep(Duration::from_millis(1500)).await;
            self.ran().len() == before
        })
        .await;
        let ran = self.ran();
        acked
            .iter()
            .copied()
            .filter(|id| !ran.contains(id))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<HashSet<u64>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for RunLog {
    fn default() -> RunLog {
        RunLog::new()
    }
}

/// Dispatches jobs `from..` with `dispatch`, one at a time, until `stop`; returns the ids
/// whose dispatch returned `Ok`, and how many failed. The producer goes on after a failure, 20
/// ms later, as an application retrying would.
pub async fn produce<F, Fut, T>(from: u64, stop: &AtomicBool, mut dispatch: F) -> (Vec<u64>, usize)
where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = gator_core::Result<T>>,
{
    let (mut acked, mut failed) = (Vec::new(), 0);
    let mut id = from;
    while !stop.load(Ordering::SeqCst) {
        match dispatch(id).await {
            Ok(_) => acked.push(id),
            Err(e) => {
                if failed == 0 {
                    eprintln!("first failed dispatch: {e}");
                }
                failed += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        id += 1;
    }
    (acked, failed)
}

/// Asserts that the producer ran (more than 100 acknowledged dispatches) and that none of the
/// acknowledged jobs was lost.
pub fn assert_none_lost(acked: &[u64], lost: &[u64]) {
    assert!(
        acked.len() > 100,
        "the producer hardly ran: {}",
        acked.len()
    );
    assert!(
        lost.is_empty(),
        "{} acknowledged jobs were lost, the first {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
}
