//! [`Fake::drain`]: runs what is due on the fake clock, and settles each run as a worker
//! would: done, retried after its backoff, ended failed, or parked until its wake time (a
//! durable job that slept or yielded its slice).

use super::journeys::{self, Link};
use super::record::Recorded;
use super::reply;
use super::run::{Failure, Outcome, Ran, StepOf, run};
use super::{Drained, Fake, Mode, lock};
use crate::context::durable::{Suspension, Wake};
use crate::horizon::SCHEDULE_HORIZON;
use crate::registry::{JobRegistration, Registry};
use crate::retry::{RetryContext, RetryDecision};
use std::time::{Duration, SystemTime};

/// The most runs one drain makes, so a job that dispatches itself forever (or fails and is
/// retried at once forever) ends.
const MAX_RUNS: usize = 10_000;

/// How soon a job that said it was interrupted runs again: as a worker that is not stopping
/// puts it back, soon but not at once, so one that always says so does not spin.
const INTERRUPTED_AGAIN_IN: Duration = Duration::from_secs(1);

impl Fake {
    /// Runs the recorded jobs that are due on the fake clock ([`Fake::now`]) here, oldest
    /// first, each with its context and the state given with [`Fake::state`], until none due
    /// is left; jobs they dispatch are recorded and run too, if due. Jobs not due yet (a later
    /// due time, a retry's backoff, outside their time windows) stay recorded. A failure with
    /// retries left is recorded again, due after its backoff ([`Drained::retried`]); see the
    /// [module docs](super). At most 10,000 runs, so a job that dispatches itself forever ends.
    pub async fn drain(&self) -> Drained {
        let registry = Registry::from_inventory();
        let mut drained = Drained::default();
        while drained.runs() < MAX_RUNS {
            let Some(mut job) = next_due(&self.mode) else {
                break;
            };
            let link = lock(&self.mode.links).remove(&job.job.jid);
            if let Some(on_expire) = job.expired(self.mode.now()) {
                expire(&self.mode, job, link, on_expire, &mut drained);
                continue;
            }
            // Its wait for a reply timed out: the attempt fails, not run.
            if let Some(failure) = reply::timed_out(&mut job) {
                let registration = registry.as_ref().ok().and_then(|r| r.get(&job.job.job));
                settle(
                    &self.mode,
                    job,
                    link,
                    registration,
                    Err(failure),
                    &mut drained,
                );
                continue;
            }
            let (registration, ran) = match &registry {
                Ok(registry) => (
                    registry.get(&job.job.job),
                    run(registry, &self.mode, &job, step_of(link.as_ref())).await,
                ),
                Err(e) => (None, unrunnable(e.to_string())),
            };
            let Ran {
                outcome,
                suspension,
                saved,
                waits,
            } = ran;
            if let Some(wait) = waits {
                let payload = saved.or(job.payload.clone());
                reply::park(&self.mode, job, link, (payload, wait), &mut drained);
                continue;
            }
            // It slept or yielded its slice: parked, whatever it returned (as a worker does).
            if let Some(suspension) = suspension {
                park(&self.mode, job, link, suspension, &mut drained);
                continue;
            }
            job.payload = saved.or(job.payload);
            settle(&self.mode, job, link, registration, outcome, &mut drained);
        }
        drained
    }
}

fn unrunnable(why: String) -> Ran {
    Ran {
        outcome: Err(Failure::Unrunnable(why)),
        suspension: None,
        saved: None,
        waits: None,
    }
}

/// Parks `job` (a step `link` says), whose run asked for `suspension`, until its wake time on
/// the mode's clock, with what it saved: its attempt not counted, listed in
/// [`Drained::suspended`]. A slice yielded is due at once: it runs again after the jobs
/// already due.
fn park(
    mode: &Mode,
    job: Recorded,
    link: Option<Link>,
    suspension: Suspension,
    drained: &mut Drained,
) {
    let now = mode.now();
    let wake = match suspension.wake {
        // A sleep is bounded by the horizon; past the end of time it waits the horizon.
        Wake::In(d) => now.checked_add(d).unwrap_or(now + SCHEDULE_HORIZON),
        // A time already past: due now, as `suspend.lua` parks it for a moment.
        Wake::At(at) => at.max(now),
    };
    drained
        .suspended
        .push((job.job.clone(), suspension.reason.clone()));
    if let Some(link) = link {
        lock(&mode.links).insert(job.job.jid.clone(), link);
    }
    mode.record(job.parked(suspension.payload, wake, suspension.reason));
}

/// Takes the oldest recorded job that is due now on the mode's clock.
fn next_due(mode: &Mode) -> Option<Recorded> {
    let now = mode.now();
    let mut recorded = lock(&mode.recorded);
    let index = recorded.iter_mut().position(|job| job.is_due(now))?;
    recorded.remove(index)
}

/// Settles a run of `job` (a step `link` says) that ended with `outcome`: done, another
/// attempt recorded after its backoff, or ended failed; a chain or workflow goes on only when
/// its step has ended.
fn settle(
    mode: &Mode,
    job: Recorded,
    link: Option<Link>,
    registration: Option<&JobRegistration>,
    outcome: Outcome,
    drained: &mut Drained,
) {
    let ended = match outcome {
        Ok(result) => {
            drained.ran += 1;
            Ok(result)
        }
        Err(failure) => match next_attempt(registration, &failure, &job, mode.now()) {
            Some((due, attempt)) => {
                drained.retried.push((job.job.clone(), failure.to_string()));
                if let Some(link) = link {
                    lock(&mode.links).insert(job.job.jid.clone(), link);
                }
                mode.record(job.again(due, attempt));
                return;
            }
            None => {
                drained.failed.push((job.job.clone(), failure.to_string()));
                Err(failure.to_string())
            }
        },
    };
    if let Some(link) = link {
        for (step, link) in journeys::after(link, &job.job, &ended) {
            lock(&mode.links).insert(step.job.jid.clone(), link);
            mode.record(step);
        }
    }
}

/// A job whose deadline came before a drain reached it: not run, listed as expired; a chain
/// or workflow it is a step of takes it as a failed step (a worker reports it dead).
fn expire(
    mode: &Mode,
    job: Recorded,
    link: Option<Link>,
    on_expire: crate::expiry::OnExpire,
    drained: &mut Drained,
) {
    drained.expired.push((job.job.clone(), on_expire));
    if let Some(link) = link {
        let ended = Err(crate::expiry::REASON.to_owned());
        for (step, link) in journeys::after(link, &job.job, &ended) {
            lock(&mode.links).insert(step.job.jid.clone(), link);
            mode.record(step);
        }
    }
}

/// When the job runs again after `failure`, and as which attempt; `None` if it ends failed.
/// The decision a worker takes (`gator-worker`'s `outcome::classify`): its retry strategy
/// first, then its `retries` and `backoff`; times on the fake clock `now`.
fn next_attempt(
    registration: Option<&JobRegistration>,
    failure: &Failure,
    job: &Recorded,
    now: SystemTime,
) -> Option<(SystemTime, u32)> {
    let (Failure::Run(error), Some(registration)) = (failure, registration) else {
        return None;
    };
    let attempt = job.job.attempt;
    if error.is_interrupted() {
        // Not a failure: the same attempt again.
        return Some((now.checked_add(INTERRUPTED_AGAIN_IN)?, attempt));
    }
    let failure = RetryContext {
        error,
        failures: attempt,
        jid: &job.job.jid,
        job: &job.job.job,
    };
    let strategy = Some(registration.retry);
    let (retries, backoff) = (registration.retries, registration.backoff);
    let RetryDecision::RetryIn(delay) =
        crate::retry::decide(strategy, retries, backoff, &failure, now).0
    else {
        return None;
    };
    // As a worker caps it: a custom backoff of `Duration::MAX` waits the horizon, not forever.
    let due = now.checked_add(delay.min(SCHEDULE_HORIZON))?;
    Some((due, attempt.saturating_add(1)))
}

/// What the context of a run of a step `link` says of its chain or workflow (nothing for a
/// job that is no step).
fn step_of(link: Option<&Link>) -> StepOf {
    link.map(Link::step_of).unwrap_or_default()
}
