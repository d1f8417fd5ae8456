//! The bounds of what a durable job saves: each is checked before a write, and a job past one
//! fails with the bound in its error (not retried: the same code would pass it again).

/// The most bytes of one checkpoint's JSON.
pub const MAX_CHECKPOINT_BYTES: usize = 64 * 1024;

/// The most steps one job saves the results of.
pub const MAX_STEPS: usize = 100;

/// The most bytes of all of one job's saved step results together.
pub const MAX_STEPS_BYTES: usize = 256 * 1024;

/// The most bytes of a step's name.
pub const MAX_STEP_NAME: usize = 128;

/// The most sleeps one job sleeps (each is recorded in its payload).
pub const MAX_SLEEPS: u32 = 10_000;
