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
//! The chain is the builder of its dispatch: `.at(..)` or `.after(..)` makes its first step
//! due later, `.through(&client)` sends it through a client of your choice.
//!
//! Each step is a [`PendingJob`], so its arguments are type-checked like any dispatch, and it
//! runs on its own queue. If a step dies, the chain halts there: the rest waits, attached to
//! the dead job, and retrying that job from the dead set resumes the chain.

use crate::error::{Error, Result};
use crate::job::{DueTime, Encoded, Job, PendingJob, Timing, encode};
use crate::payload::{ChainLink, Payload, new_jid};
use std::time::Duration;

/// A chain being built; nothing is sent until it is dispatched. `C` is the client it goes
/// through: `()`, the process-wide default, until `.through(&client)` names one.
#[derive(Debug, Default)]
#[must_use = "a Chain does nothing until it is dispatched"]
pub struct Chain<C = ()> {
    steps: Vec<Encoded>,
    /// The first step that could not be encoded; reported by dispatch.
    error: Option<Error>,
    /// When its first step is due, as the caller gave it: checked when it is dispatched.
    timing: Option<Timing>,
    client: C,
}

impl Chain {
    /// An empty chain.
    pub fn new() -> Chain {
        Chain::default()
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

impl<C> Chain<C> {
    /// Makes its first step due at `time` (a `SystemTime`, or Unix seconds as `f64`); at once
    /// if `time` has passed on Redis's clock. Refused at dispatch if not finite or past the
    /// scheduling horizon. Replaces an earlier `.after(..)`.
    pub fn at(mut self, time: impl Into<DueTime>) -> Self {
        self.timing = Some(Timing::At(time.into()));
        self
    }

    /// Makes its first step due after `delay`, counted on Redis's clock. Refused at dispatch
    /// if past the scheduling horizon. Replaces an earlier `.at(..)`.
    pub fn after(mut self, delay: Duration) -> Self {
        self.timing = Some(Timing::After(delay));
        self
    }

    /// The due time it was given, taken out for its dispatch.
    pub(crate) fn take_timing(&mut self) -> Option<Timing> {
        self.timing.take()
    }

    /// This chain going through `client` instead, and the client it had.
    pub(crate) fn swap_client<D>(self, client: D) -> (Chain<D>, C) {
        let chain = Chain {
            steps: self.steps,
            error: self.error,
            timing: self.timing,
            client,
        };
        (chain, self.client)
    }

    /// Appends a step: it runs after every step before it has succeeded. A step takes no due
    /// time of its own (dispatch refuses it): give the chain its time.
    pub fn then<J: Job>(mut self, step: PendingJob<J>) -> Self {
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
