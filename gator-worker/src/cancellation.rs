//! Cancellation on the worker's side: every [`CANCEL_POLL`], one pipeline reads the cancelling
//! sets of the queues this process fetches from (`Run::marked_cancelled`); a marked job that runs here
//! has its context cancelled ([`Context::request_cancel`]), and a marked job fetched here is
//! settled as cancelled without running.
//!
//! Only jobs that have run [`crate::processor::MARK_RUNNING_AFTER`] are registered as running:
//! before that a job's status says `queued`, and a cancel marks it for its start, which the
//! processor checks against the last read (one atomic load while nothing is marked). So a
//! stream of short jobs pays nothing for cancellation.

use crate::door::CANCEL_POLL;
use crate::leases::Leases;
use gator_core::{Client, Context};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// The jobs marked cancelled, as last read, and the long jobs running here.
pub struct Cancels {
    client: Client,
    leases: Arc<Leases>,
    /// Whether `marked` holds anything: the processors' check while nothing is marked.
    any: AtomicBool,
    marked: Mutex<HashSet<String>>,
    running: Mutex<HashMap<String, Context>>,
    outage: Arc<crate::outage::Outage>,
}

impl Cancels {
    /// Cancellation for the queues `leases` holds.
    pub fn new(
        client: Client,
        leases: Arc<Leases>,
        outage: Arc<crate::outage::Outage>,
    ) -> Arc<Cancels> {
        Arc::new(Cancels {
            client,
            leases,
            outage,
            any: AtomicBool::new(false),
            marked: Mutex::new(HashSet::new()),
            running: Mutex::new(HashMap::new()),
        })
    }

    /// Whether job `jid` was marked cancelled at the last read.
    pub fn is_marked(&self, jid: &str) -> bool {
        self.any.load(Ordering::Acquire) && lock(&self.marked).contains(jid)
    }

    /// Registers a job that runs on with `ctx`, until the guard drops; a job already marked
    /// is cancelled at once.
    pub fn running(self: &Arc<Self>, jid: &str, ctx: &Context) -> Running {
        if self.is_marked(jid) {
            ctx.request_cancel();
        }
        lock(&self.running).insert(jid.to_owned(), ctx.clone());
        Running {
            cancels: self.clone(),
            jid: jid.to_owned(),
        }
    }

    /// Reads the cancelling sets every [`CANCEL_POLL`] until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(CANCEL_POLL) => {}
            }
            if let Err(e) = self.tick().await {
                self.outage.unless_outage(
                    &e,
                    || warn!(error = %e, "could not read which jobs were cancelled; trying again"),
                );
            }
        }
    }

    /// One read of the cancelling sets; cancels the marked jobs running here.
    pub async fn tick(&self) -> gator_core::Result<()> {
        let queues = self.leases.queues();
        let marked = crate::door::run(&self.client)
            .marked_cancelled(&queues)
            .await?;
        let running = lock(&self.running);
        for jid in &marked {
            if let Some(ctx) = running.get(jid)
                && !ctx.is_cancel_requested()
            {
                info!(jid = %jid, "job cancelled: telling it to stop");
                ctx.request_cancel();
            }
        }
        drop(running);
        self.any.store(!marked.is_empty(), Ordering::Release);
        *lock(&self.marked) = marked;
        Ok(())
    }
}

/// A long job registered as running; unregistered on drop.
pub struct Running {
    cancels: Arc<Cancels>,
    jid: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&self.cancels.running).remove(&self.jid);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic between two whole-value operations.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
