//! What the durable jobs' scripts answer and are told (`context::durable` asks, `store::durable`
//! writes): whether a save found its job, and when a suspended job wakes.

use std::time::{Duration, SystemTime};

/// What a save of a running job's state found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// The state is saved: the payload in flight is the new one.
    Saved,
    /// The job is no longer in flight in this process (its lease lapsed, and recovery put it
    /// back): nothing was written, and this run must stop.
    Lost,
}

/// When a suspended job runs again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// This long after the suspension is written (on Redis's clock).
    In(Duration),
    /// At this time.
    At(SystemTime),
}
