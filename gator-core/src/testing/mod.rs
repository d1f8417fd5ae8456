//! Testing mode for an application's own tests: its dispatches go to an in-memory recorder
//! instead of Redis, with the same `dispatch` calls, and no Redis is needed.
//!
//! ```standalone_crate
//! use gator_core::{job, testing};
//! use std::time::Duration;
//!
//! #[job(queue = "mail")]
//! async fn send_email(to: String, subject: String) {}
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let fake = testing::fake();          // this test's dispatches are recorded from here on
//! SendEmail::call("ada@example.com".into(), "Welcome".into()).dispatch().await.unwrap();
//!
//! fake.assert_dispatched::<SendEmail>(("ada@example.com".into(), "Welcome".into()));
//! assert_eq!(fake.jobs_on("mail").len(), 1);
//! let drained = fake.drain().await;    // runs them here, with their context and state
//! assert_eq!(drained.ran, 1);
//!
//! // Time is the fake's: a job due in an hour waits until the test moves the clock.
//! let hour = Duration::from_secs(3600);
//! SendEmail::call("ada@example.com".into(), "Reminder".into()).after(hour).dispatch().await.unwrap();
//! assert_eq!(fake.drain().await.ran, 0);
//! assert_eq!(fake.jobs()[0].due, Some(fake.now() + hour));
//! fake.advance(hour);
//! assert_eq!(fake.drain().await.ran, 1);
//! # }
//! ```
//!
//! - **Fake** ([`fake`]): each dispatch is recorded; list them ([`Fake::jobs`],
//!   [`Fake::jobs_on`], [`Fake::dispatched`]), assert on them ([`Fake::assert_dispatched`]),
//!   and run them in the test with [`Fake::drain`] (jobs they dispatch run too).
//! - **Inline** ([`inline`]): each job runs at its dispatch, before `dispatch` returns; a job
//!   that fails makes its dispatch fail with [`crate::error::Error::InlineJobFailed`]. Inline
//!   mode has no clock: due times, retries, windows and cron are the fake's.
//!
//! **The fake clock.** A fake keeps its own time, [`Fake::now`]: the real time when
//! [`fake`] was called, moved only by [`Fake::advance`] (it does not run on its own, so a test
//! sees the same time throughout). It decides what is due; Redis's clock plays no part, as
//! there is no Redis. (It is not the clock of the code under test: `SystemTime::now()` there is
//! still the real one.)
//!
//! - `dispatch_in(d)` is due at the fake's now + `d`, `dispatch_at(t)` at `t`.
//! - [`Fake::drain`] runs only what is due at the fake's now, and only inside its job's time
//!   windows (`#[job(windows = ..)]`), if it has any (a queue's windows live in Redis and play
//!   no part here); the rest stays recorded. `advance` runs nothing itself: a drain runs what
//!   is due when it is called, so advancing past the whole of a window leaves a windowed job
//!   waiting for the next one.
//! - **Retries.** In a drain, a job that fails with retries left (its `retries`, `backoff` and
//!   `retry` strategy, as a worker decides) is recorded again with its next attempt number,
//!   due after its backoff on the fake clock, and listed in [`Drained::retried`]; advance to it
//!   and drain again to run it. A job out of retries, failed with `JobError::discard`, given
//!   up by its strategy, or not runnable (not registered, arguments that do not fit) ends in
//!   [`Drained::failed`]. A job that says it was interrupted is due again a second later, its
//!   attempt not counted, as a worker does.
//! - **Deadlines.** A job with a deadline (`expires_in`, `expires_at`, counted from its
//!   dispatch on the fake clock, a chain's or workflow's steps from theirs) that a drain
//!   reaches at or after it is not run: it is listed in [`Drained::expired`], with its
//!   `on_expire`, and a chain or workflow it is a step of takes it as a failed step. Inline, a job starts at its dispatch, judged on the real
//!   clock: only an `expires_at` already past expires it (its dispatch then fails with
//!   [`crate::error::Error::InlineJobFailed`], or, with `on_expire = "drop"`, returns its jid
//!   without running it).
//! - **Durable jobs** ([`crate::context::durable`]). A drain keeps what a run saved with the
//!   job, as a worker keeps it in the job's payload: a retry gets its steps' results back
//!   without running them and resumes from its checkpoint. A run that sleeps
//!   ([`crate::Context::sleep`], [`crate::Context::sleep_until`]) is parked until its wake
//!   time on the fake clock, its attempt not counted: listed in [`Drained::suspended`] (with
//!   `sleep 1` for its first sleep), and in [`Fake::jobs`] with [`Dispatched::suspended`] set
//!   and `due` its wake time; a drain before `advance` reaches it does not run it. A slice
//!   yielded by [`crate::Context::iterate`] is due at once: the same drain runs it again after
//!   the jobs already due, from its saved cursor (`max_slice(Duration::ZERO)` yields after
//!   each item). Inline, a run that sleeps or yields is run again at once, resumed, until it
//!   ends (inline mode has no clock, so it does not wait for a sleep, as it does not wait for a
//!   due time): its dispatch returns when the job has ended. Its steps still run once.
//!   A job waiting for a reply ([`crate::Context::wait_for_reply`]) is parked (`reply <key>`)
//!   until [`Fake::reply`] gives it one (it is then due at once) or its timeout comes on the
//!   fake clock (its attempt fails, under its retry policy). Inline, no one can reply before
//!   the dispatch returns: the wait fails the dispatch.
//! - **Cron.** Periodic jobs declared in code (`#[job(cron = ..)]`) tick only in a test that
//!   asks: [`Fake::cron`] (every entry) or [`Fake::cron_of`] (one job's). From then on, each
//!   tick an `advance` crosses records one dispatch of the job on its queue, as a worker
//!   would enqueue it (ticks after the clock's time when it was turned on; at most 10,000 of
//!   an entry per advance: the earliest). A test that never turns them on never sees them.
//!
//! **Scope.** The mode holds on the thread that created it, until its guard drops: a
//! `#[tokio::test]` (a current-thread runtime, the default) and everything it awaits or spawns
//! run there, while other tests run on their own threads and see their own jobs. Dispatches
//! through `Client` methods are caught too. (On a multi-thread runtime, tasks that
//! move to other threads are not in the mode: use the default runtime for such tests.)
//!
//! **Chains and workflows** ([`crate::chain::Chain`], [`crate::workflow::Workflow`]) are caught too: in fake
//! mode their first steps are recorded, and [`Fake::drain`] records each next step when the
//! steps before it succeeded, with their results for `ctx.parent_result`, and with the
//! workflow's failure policies. A step with retries left is retried as any job is; it counts
//! as failed for its chain or workflow (which halts, continues or fails) only once it ends
//! failed. In inline mode they run step by step at their dispatch. Steps added at run time
//! (`Client::add_to_workflow`) still go to Redis.

mod clock;
mod drain;
mod journeys;
mod record;
mod reply;
mod run;

use clock::Ticking;
use journeys::Link;
pub(crate) use journeys::{dispatch_chain, dispatch_workflow};
use record::Recorded;

use crate::context::StateMap;
use crate::error::{Error, Result};
use crate::job::{Encoded, Job};
use crate::registry::Registry;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One recorded dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct Dispatched {
    /// The jid its dispatch returned.
    pub jid: String,
    /// The job's wire name.
    pub job: String,
    /// Its queue.
    pub queue: String,
    /// Its arguments, as the payload would hold them (a JSON array).
    pub args: serde_json::Value,
    /// When it is to run, on the fake clock: for `dispatch_at` and `dispatch_in`, and for a
    /// retry; `None` for now.
    pub due: Option<SystemTime>,
    /// The attempt it is, as `ctx.attempt()` will say: 1, then 2 for its first retry.
    pub attempt: u32,
    /// Why it is parked, while a durable job is ([`crate::Context::sleep`], a slice of
    /// [`crate::Context::iterate`] yielded), as its status says on Redis: `sleep 1` for its
    /// first sleep, `slice 2` for its second slice; `due` is its wake time. `None` for a job
    /// waiting for its first run or a retry.
    pub suspended: Option<String>,
}

/// What [`Fake::drain`] did. Each run counts once: in `ran`, `retried`, `failed` or
/// `suspended`.
#[derive(Debug, Default)]
pub struct Drained {
    /// Runs that succeeded (including those of jobs dispatched by the jobs run).
    pub ran: usize,
    /// Runs that failed with another attempt to come, each job as it ran (its `attempt` the
    /// one that failed), with why. The next attempt is recorded (listed by [`Fake::jobs`]),
    /// due after the job's backoff on the fake clock: [`Fake::advance`] to it and drain again.
    pub retried: Vec<(Dispatched, String)>,
    /// Jobs that ended failed, with why: out of retries, failed with `JobError::discard`,
    /// given up by their retry strategy, or not runnable (a job not registered in this binary,
    /// arguments that do not fit).
    pub failed: Vec<(Dispatched, String)>,
    /// Jobs not started by their deadline (`expires_in`, `expires_at`) on the fake clock: not
    /// run, with what their `on_expire` says becomes of them (`Dead`: a worker would keep them
    /// in the dead set; `Drop`: dropped). Not runs: not counted in [`Drained::ran`].
    pub expired: Vec<(Dispatched, crate::expiry::OnExpire)>,
    /// Runs of durable jobs that ended parked, each job as it ran, with why (`sleep 1`,
    /// `slice 2`): a sleep ([`crate::Context::sleep`]) is recorded again due at its wake time
    /// on the fake clock, its attempt not counted ([`Dispatched::suspended`]); a slice yielded
    /// by [`crate::Context::iterate`] is due at once, and this drain runs it again after the
    /// jobs already due. Its next run resumes with what it saved.
    pub suspended: Vec<(Dispatched, String)>,
}

impl Drained {
    /// Every run, whatever its end.
    fn runs(&self) -> usize {
        self.ran + self.retried.len() + self.failed.len() + self.suspended.len()
    }
}

/// The mode in force on a thread.
pub(crate) struct Mode {
    inline: bool,
    recorded: Mutex<VecDeque<Recorded>>,
    states: Mutex<StateMap>,
    /// For recorded steps of chains and workflows: what they belong to, and what comes next.
    links: Mutex<HashMap<String, Link>>,
    /// The mode's time: the real time when it began (to the ms), moved only by
    /// [`Fake::advance`].
    clock: Mutex<SystemTime>,
    /// The cron entries the test turned on ([`Fake::cron`]).
    cron: Mutex<Vec<Ticking>>,
}

impl Mode {
    /// The mode's time, which a dispatch's delay counts from ([`Fake::now`]).
    pub(crate) fn now(&self) -> SystemTime {
        *lock(&self.clock)
    }

    /// Records `job`, to run in a drain.
    fn record(&self, job: Recorded) {
        lock(&self.recorded).push_back(job);
    }
}

thread_local! {
    static ACTIVE: RefCell<Option<Arc<Mode>>> = const { RefCell::new(None) };
}

/// The testing mode in force on this thread, if any (one thread-local read).
pub(crate) fn active() -> Option<Arc<Mode>> {
    ACTIVE.with(|active| active.borrow().clone())
}

fn install(inline: bool) -> Arc<Mode> {
    let mode = Arc::new(Mode {
        inline,
        recorded: Mutex::new(VecDeque::new()),
        states: Mutex::new(StateMap::default()),
        links: Mutex::new(HashMap::new()),
        // To the ms, the unit of every time Gator stores: `dispatch_at(fake.now() + d)` is
        // then recorded due at exactly that time.
        clock: Mutex::new(UNIX_EPOCH + Duration::from_millis(crate::clock::now_ms())),
        cron: Mutex::new(Vec::new()),
    });
    ACTIVE.with(|active| *active.borrow_mut() = Some(mode.clone()));
    mode
}

fn uninstall(mode: &Arc<Mode>) {
    ACTIVE.with(|active| {
        let mut active = active.borrow_mut();
        if active.as_ref().is_some_and(|m| Arc::ptr_eq(m, mode)) {
            *active = None;
        }
    });
}

/// Records this thread's dispatches from now until the returned guard drops; its clock
/// ([`Fake::now`]) starts at the real time, to the millisecond.
pub fn fake() -> Fake {
    Fake {
        mode: install(false),
    }
}

/// Runs each job at its dispatch on this thread, from now until the returned guard drops.
pub fn inline() -> Inline {
    Inline {
        mode: install(true),
    }
}

/// The fake mode's guard and recorder: see the [module docs](self).
pub struct Fake {
    mode: Arc<Mode>,
}

/// The inline mode's guard: see the [module docs](self).
pub struct Inline {
    mode: Arc<Mode>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        uninstall(&self.mode);
    }
}

impl Drop for Inline {
    fn drop(&mut self) {
        uninstall(&self.mode);
    }
}

impl Inline {
    /// Gives the jobs run inline the application state `value` (as `Worker::builder().state`).
    pub fn state<T: Clone + Send + Sync + 'static>(&self, value: T) -> &Inline {
        lock(&self.mode.states).insert(value);
        self
    }
}

impl Fake {
    /// Gives the jobs [`Fake::drain`] runs the application state `value`.
    pub fn state<T: Clone + Send + Sync + 'static>(&self, value: T) -> &Fake {
        lock(&self.mode.states).insert(value);
        self
    }

    /// Every dispatch recorded and not yet drained, oldest first, due or not.
    pub fn jobs(&self) -> Vec<Dispatched> {
        lock(&self.mode.recorded)
            .iter()
            .map(|r| r.job.clone())
            .collect()
    }

    /// The recorded dispatches to `queue`.
    pub fn jobs_on(&self, queue: &str) -> Vec<Dispatched> {
        lock(&self.mode.recorded)
            .iter()
            .filter(|r| r.job.queue == queue)
            .map(|r| r.job.clone())
            .collect()
    }

    /// The arguments of every recorded dispatch of job `J`, typed, oldest first, as
    /// `dispatch_many` takes them ([`Job::Item`]: the bare value for a one-parameter job).
    pub fn dispatched<J: Job>(&self) -> Vec<J::Item> {
        lock(&self.mode.recorded)
            .iter()
            .filter(|r| r.job.job == J::NAME)
            .filter_map(|r| serde_json::from_value::<J::Args>(r.job.args.clone()).ok())
            .map(J::item_of)
            .collect()
    }

    /// Panics, listing what was dispatched, unless a job `J` was dispatched with `args`.
    #[track_caller]
    pub fn assert_dispatched<J: Job>(&self, args: J::Item)
    where
        J::Item: PartialEq + Debug,
    {
        let found = self.dispatched::<J>();
        assert!(
            found.contains(&args),
            "no {} was dispatched with {args:?}; dispatched: {:#?}",
            J::NAME,
            self.jobs()
        );
    }

    /// Forgets every recorded dispatch (and the chains and workflows they were steps of).
    pub fn clear(&self) {
        lock(&self.mode.recorded).clear();
        lock(&self.mode.links).clear();
    }
}

/// Takes the dispatch of `job` (due at `due`, on the mode's clock) in `mode` ([`active`]):
/// records it, or runs it inline; returns its jid.
pub(crate) async fn dispatch(
    mode: Arc<Mode>,
    job: Result<Encoded>,
    due: Option<SystemTime>,
) -> Result<String> {
    let Encoded {
        payload, expiry, ..
    } = job?;
    let now = crate::clock::to_ms(mode.now());
    if !mode.inline {
        mode.record(Recorded::of(&payload, due, now).expiring(expiry, now));
        return Ok(payload.jid);
    }
    // Inline, it starts now, on the real clock: only a deadline already past expires it.
    let real_now = crate::clock::now_ms();
    let recorded = Recorded::of(&payload, due, now).expiring(expiry, real_now);
    match recorded.expired(UNIX_EPOCH + Duration::from_millis(real_now)) {
        None => {}
        Some(crate::expiry::OnExpire::Drop) => return Ok(payload.jid),
        Some(crate::expiry::OnExpire::Dead) => {
            return Err(Error::InlineJobFailed {
                job: payload.job,
                reason: crate::expiry::REASON.to_owned(),
            });
        }
    }
    let registry = Registry::from_inventory()?;
    // Boxed: a job run inline may itself dispatch inline.
    Box::pin(run::run_to_end(
        &registry,
        &mode,
        &recorded,
        run::StepOf::default(),
    ))
    .await
    .map_err(|failure| Error::InlineJobFailed {
        job: recorded.job.job.clone(),
        reason: failure.to_string(),
    })?;
    Ok(payload.jid)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a test panicked while holding it.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
