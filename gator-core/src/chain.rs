//! Chains: jobs that run one after another, each only after the previous one succeeded.
//!
//! ```no_run
//! # use gator_core::{job, Chain};
//! # #[job] async fn fetch_page(url: String) {}
//! # #[job(queue = "parse")] async fn parse(url: String, depth: u32) {}
//! # async fn demo() -> gator_core::Result<()> {
//! let chain_id = Chain::new()
//!     .then(FetchPage::call("https://example.com".into()))
//!     .then(Parse::call("https://example.com".into(), 2))
//!     .dispatch()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Each step is a [`PendingJob`], so its arguments are type-checked like any dispatch, and it
//! runs on its own queue. If a step dies, the chain halts there: the rest waits, attached to
//! the dead job, and retrying that job from the dead set resumes the chain.

use crate::error::{Error, Result};
use crate::job::{Encoded, Job, PendingJob, encode};
use crate::payload::{ChainLink, Payload, new_jid};

/// A chain being built; nothing is sent until it is dispatched.
#[derive(Debug, Default)]
#[must_use = "a Chain does nothing until it is dispatched"]
pub struct Chain {
    steps: Vec<Encoded>,
    /// The first step that could not be encoded; reported by dispatch.
    error: Option<Error>,
}

impl Chain {
    /// An empty chain.
    pub fn new() -> Chain {
        Chain::default()
    }

    /// Appends a step: it runs after every step before it has succeeded.
    pub fn then<J: Job>(mut self, step: PendingJob<J>) -> Chain {
        match encode(step) {
            Ok(payload) => self.steps.push(payload),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// How many steps the chain has.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the chain has no step.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The steps, not yet placed on shards or linked (see [`link`]).
    pub(crate) fn into_steps(self) -> Result<Vec<Encoded>> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.steps.is_empty() {
            return Err(Error::EmptyChain);
        }
        Ok(self.steps)
    }
}

/// `steps` (placed on their queues' shards, so that each link names the list its next step
/// goes to) with their links filled in, and the chain id.
pub(crate) fn link(mut steps: Vec<Payload>) -> Result<(String, Vec<Payload>)> {
    if steps.is_empty() {
        return Err(Error::EmptyChain);
    }
    let id = new_jid();
    let list_queue = steps[0].queue.clone();
    let nexts: Vec<(Option<String>, Option<String>)> = (0..steps.len())
        .map(|i| {
            steps
                .get(i + 1)
                .map(|n| (Some(n.jid.clone()), Some(n.queue.clone())))
                .unwrap_or((None, None))
        })
        .collect();
    for (step, (next_jid, next_queue)) in steps.iter_mut().zip(nexts) {
        step.chain = Some(Box::new(ChainLink {
            id: id.clone(),
            list_queue: list_queue.clone(),
            next_jid,
            next_queue,
        }));
    }
    Ok((id, steps))
}
