//! The rules of what Gator accepts and keeps, in one place for the sides that check them:
//! `#[job]` at compile time (gator-macros), and the client, the HTTP API and the worker at run
//! time (gator-core, gator-web). A naming rule answers `Err(problem)` with a lowercase phrase
//! that completes "invalid queue name ...: it ...", so every side words its errors alike.
//!
//! No dependencies: a proc-macro crate links it too.

mod cron;
mod durations;
mod flow;
mod names;
mod text;
mod windows;

pub use cron::cron_shape;
pub use durations::{DurationError, millis, parse_duration};
pub use flow::{CostError, DEFAULT_PRIORITY, MAX_PRIORITY, cost, priority};
pub use names::{MAX_FLOW_NAME, MAX_JOB_NAME, MAX_QUEUE_NAME, flow_name, job_name, queue_name};
pub use text::{MAX_ERROR_TEXT, cut, escape, is_hidden};
pub use windows::{MINUTES_PER_DAY, Window, WindowError, WindowProblem, window};
