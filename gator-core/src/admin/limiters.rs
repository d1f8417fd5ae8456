//! Rate limiters shared across queues: one rate for every job that names the limiter, on
//! whichever queue it is (an email API's 100 calls a second, used by three job types on two
//! queues).
//!
//! A shared limiter's keys carry its own hash tag, so on a cluster they live on one node,
//! usually not their queues'. A queue's admit script cannot reach them there, so the worker
//! takes each start from the limiter first (`limiter_take.lua`, on the limiter's node and its
//! Redis time) and hands the answer to `admit.lua`: a start taken, or how long the limiter is
//! closed. **Cost:** one more round trip per job started under a shared limiter, on a single
//! node as on a cluster; and all of a shared limiter's starts go through the one node that
//! holds it. A start taken that the admit then does not use (the queue's concurrency limit was
//! full, or another worker took the job) is lost, so a shared limiter may run slightly below
//! its rate under contention, never above it.
//!
//! **Which limiter wins.** A queue that defines a limiter of the same name itself
//! (`gator-worker queue rate QUEUE 10/1s --limiter email`) uses its own for its jobs; the
//! shared one applies to every queue that does not.

use super::Admin;
use crate::error::Result;
use crate::flow::RateSpec;
use crate::store;
use crate::store::flow_status::RateStatus;

impl Admin {
    /// Sets shared rate limiter `name` to `rate`, or removes it with `None` (see
    /// [`crate::flow`]'s shared limiters). Every worker obeys it from its next start on.
    pub async fn set_shared_rate(&self, name: &str, rate: Option<RateSpec>) -> Result<()> {
        store::flow::set_shared_rate(&mut self.connection(), self.keys(), name, rate).await
    }

    /// The shared rate limiters, with their rates and next allowed starts.
    pub async fn shared_limiters(&self) -> Result<Vec<RateStatus>> {
        store::flow_status::shared_limiters(&mut self.connection(), self.keys()).await
    }
}
