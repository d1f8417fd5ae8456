//! Flow control: priority, pause, concurrency limits with cost and shares, critical jobs and
//! rate limits, decided in Redis on Redis time, across every worker process.
//!
//! **The model.** A queue is *plain* until it uses one of these features; then it is
//! *controlled* for good (its `flow` hash exists). A controlled queue's jobs are never on its
//! list: each is *parked* in a sorted set of its *parking key* (its limit key, and the rate
//! limiter it names), ordered by priority, and only `admit.lua` starts them, atomically:
//!
//! - **Priority**: of the jobs that may start, the lowest number first ([`DEFAULT_PRIORITY`]
//!   is 100), first in, first out among equals. With aging (`queue aging NAME 30s`), a job's
//!   effective priority is `priority - floor(waited / aging)`, so a waiting job gains one step
//!   per interval and no priority starves. With `queue order NAME due` the queue orders by the
//!   time a job became due and uses priority only to break ties.
//! - **Pause**: a paused queue accepts jobs and starts none; running jobs finish.
//! - **Concurrency limit**: at most `limit` units run at once over the whole fleet; a job takes
//!   its `cost` in units. Each limit key may have a share (a percentage of the limit; unlisted
//!   keys take the default share, 100 % if none is set). A key at its share waits *blocked*,
//!   out of everyone's way, until one of its units is released; a key that runs nothing may
//!   always start one job; and idle units are lent to the keys that wait, in proportion to
//!   their shares, and come back as their jobs end (work-conserving). Critical jobs run
//!   outside the limit.
//! - **Rate limits**: GCRA on Redis time, for the queue as a whole and for named limiters
//!   that jobs opt into. A job over a limit stays parked until the time it may start.
//!
//! - **Fair keys**: jobs with a fair key (`.fair_key(tenant)`, `#[job(fair_key = arg)]`) are
//!   taken in weighted round-robin over their keys (weighted fair queueing on a virtual
//!   clock, no wall clock), so one key's backlog never holds back another key's first job by
//!   more than one job of each key waiting. Weights per key ([`FlowSetting::FairWeight`], 1 by
//!   default); fair keys combine with priority (a band per priority), limits and rates.
//!
//! - **No overlap**: a job with an overlap key (`#[job(no_overlap)]`) starts only while no
//!   other job of the queue with that key runs; the others wait parked under a parking key
//!   that includes the overlap key, so they block no other job, and are woken when the holder
//!   settles. See [`overlap`].
//!
//! Units are leased: they are held under the process's lease on the queue, and the recovery
//! that puts a dead process's jobs back releases its units in the same script.
//!
//! **Batches.** One `admit.lua` call (`store::admit`) settles the successes of a
//! worker's processors, starts a job for each processor that waits, and takes *spares* ahead
//! where that changes no decision (no time windows, no rate limiter closer than 1 ms per spare,
//! at most half a concurrency limit in use), deciding job after job exactly as one call per job
//! would. The worker writes successes asynchronously with its next call and hands out the jobs
//! taken ahead from a small buffer (`gator_worker::admission`).
//!
//! **Which setting wins.** A job's own options (priority, cost, limit key, critical, rate
//! limiter) come from `#[job(...)]`, and a per-dispatch builder method overrides them. The
//! queue's settings (pause, limit, shares, rate limiters' values, aging, order) live only in
//! Redis, set by the CLI (`gator-worker queue ...`) or `admin`; what is in Redis is
//! what every worker obeys at once.

mod options;
pub mod overlap;
mod settings;
mod ticket;
mod windows;

pub use options::{DEFAULT_PRIORITY, FlowOptions, MAX_PRIORITY, check_limiter_name};
pub use settings::{FlowSetting, MAX_FAIR_WEIGHT, QueueOrdering, RateSpec};
pub use ticket::Ticket;
pub use windows::Windows;
