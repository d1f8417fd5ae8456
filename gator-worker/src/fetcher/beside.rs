//! A processor's next job fetched beside its success's write. When the draw for its next job
//! names another queue than the one its job came from, the success's `MULTI` cannot take it
//! (another hash tag), but the `LMOVE` that does goes out with it, on the same connection at
//! the same moment: Redis reads both in one read and answers both in one write, so a worker of
//! many queues pays one round trip a job, as a worker draining one queue does.

use super::Fetcher;
use crate::door::{Batch, Fetched};

impl Fetcher {
    /// Whether this processor's next job may be fetched from `queue` beside a success: a
    /// plain queue (not under flow control, not sharded, none of its jobs passed over), under
    /// a lease that surely holds for half its length more, as for any fetch by plain `LMOVE`.
    pub(crate) fn fetches_beside(&self, queue: &str) -> bool {
        !self.order.is_controlled(queue)
            && !self.order.is_sharded(queue)
            && !self.order.passing().passes(queue)
            && self.leases.takes_plainly(queue)
    }

    /// One job of `queue` by plain `LMOVE` (see [`Fetcher::fetches_beside`]), held. None if the
    /// queue is empty, became controlled, or the call failed: the next fetch meets the cause,
    /// and a job whose reply was lost is put back by recovery as a stranded one.
    pub(crate) async fn fetch_beside(&self, queue: &str) -> Option<Fetched> {
        let mut fetch = crate::door::fetch(&self.client);
        match fetch.fetch_leased(queue, &self.process, 1).await {
            Ok(Batch::Jobs(jobs)) => {
                self.hold(&jobs);
                jobs.into_iter().next()
            }
            Ok(Batch::Controlled) => {
                self.order.mark_controlled(queue);
                None
            }
            Ok(Batch::NoLease) | Err(_) => None,
        }
    }
}
