//! Testing mode for an application's own tests: its dispatches go to an in-memory recorder
//! instead of Redis, with the same `dispatch` calls, and no Redis is needed.
//!
//! ```standalone_crate
//! use gator_core::{job, testing};
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
//! # }
//! ```
//!
//! - **Fake** ([`fake`]): each dispatch is recorded; list them ([`Fake::jobs`],
//!   [`Fake::jobs_on`], [`Fake::dispatched`]), assert on them ([`Fake::assert_dispatched`]),
//!   and run them in the test with [`Fake::drain`] (jobs they dispatch run too).
//! - **Inline** ([`inline`]): each job runs at its dispatch, before `dispatch` returns; a job
//!   that fails makes its dispatch fail with [`crate::error::Error::InlineJobFailed`].
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
//! workflow's failure policies (a failed step halts, continues or fails the workflow; there are
//! no retries in a drain). In inline mode they run step by step at their dispatch. Steps added
//! at run time (`Client::add_to_workflow`) still go to Redis.

mod journeys;

use journeys::Link;
pub(crate) use journeys::{dispatch_chain, dispatch_workflow};

use crate::context::{Context, JobInfo, StateMap};
use crate::error::{Error, Result};
use crate::job::{Encoded, Execution, Job};
use crate::registry::Registry;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

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
    /// When it was to run, for `dispatch_at` and `dispatch_in`; `None` for now.
    pub due: Option<SystemTime>,
}

impl Dispatched {
    /// The record of `payload`'s dispatch, due at `due`.
    pub(crate) fn of(payload: &crate::payload::Payload, due: Option<SystemTime>) -> Dispatched {
        Dispatched {
            jid: payload.jid.clone(),
            job: payload.job.clone(),
            queue: payload.queue.clone(),
            args: payload.args.clone(),
            due,
        }
    }
}

/// What [`Fake::drain`] did.
#[derive(Debug, Default)]
pub struct Drained {
    /// Jobs run (including those dispatched by the jobs run).
    pub ran: usize,
    /// Jobs that failed, with why (a job not registered in this binary fails too).
    pub failed: Vec<(Dispatched, String)>,
}

/// The mode in force on a thread.
pub(crate) struct Mode {
    inline: bool,
    recorded: Mutex<VecDeque<Dispatched>>,
    states: Mutex<StateMap>,
    /// For recorded steps of chains and workflows: what they belong to, and what comes next.
    links: Mutex<HashMap<String, Link>>,
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

/// Records this thread's dispatches from now until the returned guard drops.
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

    /// Every dispatch recorded and not yet drained, oldest first.
    pub fn jobs(&self) -> Vec<Dispatched> {
        lock(&self.mode.recorded).iter().cloned().collect()
    }

    /// The recorded dispatches to `queue`.
    pub fn jobs_on(&self, queue: &str) -> Vec<Dispatched> {
        lock(&self.mode.recorded)
            .iter()
            .filter(|d| d.queue == queue)
            .cloned()
            .collect()
    }

    /// The arguments of every recorded dispatch of job `J`, typed, oldest first, as
    /// `dispatch_many` takes them ([`Job::Item`]: the bare value for a one-parameter job).
    pub fn dispatched<J: Job>(&self) -> Vec<J::Item> {
        lock(&self.mode.recorded)
            .iter()
            .filter(|d| d.job == J::NAME)
            .filter_map(|d| serde_json::from_value::<J::Args>(d.args.clone()).ok())
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

    /// Runs the recorded jobs here, oldest first, each with its context and the state given
    /// with [`Fake::state`], until none is left (jobs they dispatch are recorded and run too);
    /// at most 10,000, so a job that dispatches itself forever ends. Due times are ignored.
    pub async fn drain(&self) -> Drained {
        let registry = Registry::from_inventory();
        let mut drained = Drained::default();
        while drained.ran + drained.failed.len() < 10_000 {
            let Some(job) = lock(&self.mode.recorded).pop_front() else {
                break;
            };
            let link = lock(&self.mode.links).remove(&job.jid);
            let outcome = match &registry {
                Ok(registry) => run(registry, &self.mode, &job, link.as_ref()).await,
                Err(e) => Err(e.to_string()),
            };
            if let Some(link) = link {
                let next = journeys::after(link, &job, &outcome);
                let mut links = lock(&self.mode.links);
                let mut recorded = lock(&self.mode.recorded);
                for (step, link) in next {
                    links.insert(step.jid.clone(), link);
                    recorded.push_back(step);
                }
            }
            match outcome {
                Ok(_) => drained.ran += 1,
                Err(why) => drained.failed.push((job, why)),
            }
        }
        drained
    }
}

/// Runs `job` (a step of the chain or workflow `link` says) with its registration in
/// `registry`; its result (JSON), or `Err` with why it failed.
async fn run(
    registry: &Registry,
    mode: &Mode,
    job: &Dispatched,
    link: Option<&Link>,
) -> std::result::Result<Option<String>, String> {
    let Some(registration) = registry.get(&job.job) else {
        return Err(format!("no job named {:?} is registered", job.job));
    };
    let now = crate::payload::now_ms();
    let info = JobInfo {
        jid: job.jid.clone(),
        job_name: job.job.clone(),
        queue: job.queue.clone(),
        attempt: 1,
        created_at_ms: now,
        enqueued_at_ms: now,
        chain_id: link.and_then(Link::chain_id),
    };
    let states = lock(&mode.states).clone();
    let ctx = Context::new(info, states, tokio_util::sync::CancellationToken::new());
    let ctx = match link.and_then(Link::workflow) {
        Some((id, parents)) => ctx.with_workflow(id, parents),
        None => ctx,
    };
    let execution = (registration.run)(&job.args.to_string(), ctx)
        .map_err(|e| format!("its arguments do not fit: {e}"))?;
    let result = match execution {
        Execution::Blocking(body) => body(),
        Execution::Async(body) => body.await,
    };
    result.map_err(|e| e.to_string())
}

/// Takes the dispatch of `job` (due at `due`) in `mode` ([`active`]): records it, or runs it
/// inline; returns its jid.
pub(crate) async fn dispatch(
    mode: Arc<Mode>,
    job: Result<Encoded>,
    due: Option<SystemTime>,
) -> Result<String> {
    let payload = job?.payload;
    let dispatched = Dispatched::of(&payload, due);
    if !mode.inline {
        lock(&mode.recorded).push_back(dispatched);
        return Ok(payload.jid);
    }
    let registry = Registry::from_inventory()?;
    // Boxed: a job run inline may itself dispatch inline.
    Box::pin(run(&registry, &mode, &dispatched, None))
        .await
        .map_err(|reason| Error::InlineJobFailed {
            job: dispatched.job.clone(),
            reason,
        })?;
    Ok(payload.jid)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a test panicked while holding it.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
