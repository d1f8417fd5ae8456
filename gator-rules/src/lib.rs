//! The rules of what Gator accepts and keeps, in one place for the sides that check them:
//! `#[job]` at compile time (gator-macros), and the client, the HTTP API and the worker at run
//! time (gator-core, gator-web).
//!
//! ```
//! use std::time::Duration;
//!
//! assert!(gator_rules::queue_name("mail.high").is_ok());
//! assert_eq!(gator_rules::queue_name("a:b").unwrap_err(), "contains ':'");
//! let night = gator_rules::window("22:00-02:00").unwrap();
//! assert_eq!((night.start(), night.end()), (22 * 60, 2 * 60));
//! assert_eq!(gator_rules::parse_duration("1m30s"), Ok(Duration::from_secs(90)));
//! assert_eq!(gator_rules::priority(10_000), None);
//! assert_eq!(gator_rules::cron_shape("* * * *"), Err(4));
//! ```
//!
//! - **Names** ([`queue_name`], [`job_name`], [`flow_name`], [`visible_name`]): queues, jobs,
//!   what flow control keeps (limit keys, rate limiter names, fair and overlap keys), and the
//!   one rule every name or key a user gives follows ([`visible_name`]: every character shows
//!   as itself, [`is_invisible`]). A naming rule answers `Err(problem)` with a lowercase phrase
//!   that completes "invalid queue name ...: it ...", so every side words its errors alike.
//! - **Time windows** ([`window`]): the `HH:MM-HH:MM` grammar; gator-core adds the zone.
//! - **Durations** ([`parse_duration`], [`millis`]): the notation (`30s`, `1h 30m`) as the
//!   command line reads it, and the ms the wire stores.
//! - **Flow options** ([`priority`], [`cost`]) and a cron expression's shape ([`cron_shape`]).
//! - **Text from outside** ([`escape`], [`cut`]): hidden characters escaped for logs, long
//!   texts cut.
//!
//! A rule that returns what is wrong as a value ([`WindowProblem`], [`CostError`]) leaves the
//! wording to each side, which may keep messages its users already know.
//!
//! No dependencies: a proc-macro crate links it too.

// A published crate: every public item is documented (the workspace only warns).
#![deny(missing_docs)]

mod cron;
mod durations;
mod flow;
mod names;
mod text;
mod visible;
mod windows;

pub use cron::cron_shape;
pub use durations::{DurationError, millis, parse_duration};
pub use flow::{CostError, DEFAULT_PRIORITY, MAX_PRIORITY, cost, priority};
pub use names::{MAX_FLOW_NAME, MAX_JOB_NAME, MAX_QUEUE_NAME, flow_name, job_name, queue_name};
pub use text::{MAX_ERROR_TEXT, cut, escape, is_hidden};
pub use visible::{is_invisible, visible_name};
pub use windows::{MINUTES_PER_DAY, Window, WindowError, WindowProblem, window};
