//! One recorded dispatch as the fake keeps it: what a test sees ([`Dispatched`]), and what
//! decides when a drain may run it (its due time, its job's time windows).

use super::Dispatched;
use crate::clock::to_ms;
use crate::expiry::{Expiry, OnExpire};
use crate::flow::Windows;
use crate::payload::Payload;
use std::time::SystemTime;

/// A recorded dispatch, with what decides when [`super::Fake::drain`] may run it.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// What a test sees of it.
    pub(crate) job: Dispatched,
    /// When it was dispatched (a cron tick: the tick), on the mode's clock, for its context.
    pub(crate) created_at_ms: u64,
    /// The job's time windows (`#[job(windows = ..)]`, `PendingJob::windows`), from its flow
    /// options: it runs only inside one.
    windows: Option<Windows>,
    /// The window `windows` last gave, `(open, close)` in Unix ms: a drain asks again before
    /// each run, and the clock only moves forward, so it holds until `close`.
    window: Option<(i64, i64)>,
    /// Its deadline (Unix ms, on the mode's clock) and what becomes of it past it
    /// (`expires_in`, `expires_at`): a drain at or after it does not run it.
    pub(crate) deadline: Option<(u64, OnExpire)>,
    /// The payload with what the job saved (`ctx.checkpoint`, `ctx.step`, a sleep), as a
    /// worker keeps it in Redis: its next run resumes from it. `None` until it saved anything.
    pub(crate) payload: Option<String>,
    /// The reply key it waits for (`ctx.wait_for_reply`), `due` its timeout: [`super::Fake::reply`]
    /// makes it due now with the reply saved; a drain at its due fails the wait.
    pub(crate) waiting: Option<String>,
}

impl Recorded {
    /// The record of `payload`'s dispatch at `created_at_ms`, due at `due` (`None`: now).
    pub(crate) fn of(payload: &Payload, due: Option<SystemTime>, created_at_ms: u64) -> Recorded {
        // Checked when the job was encoded, so an error here cannot happen; a job whose
        // windows did not parse would have had no dispatch to record.
        let windows = payload
            .flow
            .as_ref()
            .and_then(|flow| flow.parsed_windows().ok().flatten());
        Recorded {
            job: Dispatched {
                jid: payload.jid.clone(),
                job: payload.job.clone(),
                queue: payload.queue.clone(),
                args: payload.args.clone(),
                due,
                attempt: 1,
                suspended: None,
            },
            created_at_ms,
            windows,
            window: None,
            deadline: None,
            payload: None,
            waiting: None,
        }
    }

    /// This record with `expiry`, its deadline counted from `now_ms` (the dispatch, on the
    /// mode's clock) as a worker's Redis counts it from its `TIME`.
    pub(crate) fn expiring(mut self, expiry: Option<Expiry>, now_ms: u64) -> Recorded {
        self.deadline = expiry.map(|e| (crate::expiry::resolve(e.deadline, now_ms), e.on_expire));
        self
    }

    /// What becomes of it if its deadline has come at `now` (it is then not run): `None` to
    /// run it.
    pub(crate) fn expired(&self, now: SystemTime) -> Option<OnExpire> {
        let (deadline, on_expire) = self.deadline?;
        (deadline <= to_ms(now)).then_some(on_expire)
    }

    /// The next attempt of this job after a failure: due at `due`, numbered `attempt`.
    pub(crate) fn again(mut self, due: SystemTime, attempt: u32) -> Recorded {
        self.job.due = Some(due);
        self.job.attempt = attempt;
        self.job.suspended = None;
        self.waiting = None;
        self
    }

    /// This job parked until `wake` (on the mode's clock) for `reason`, with what its run
    /// saved (`payload`), as `suspend.lua` parks it: the same attempt.
    pub(crate) fn parked(mut self, payload: String, wake: SystemTime, reason: String) -> Recorded {
        self.job.due = Some(wake);
        self.job.suspended = Some(reason);
        self.payload = Some(payload);
        self
    }

    /// The payload its next run starts from: the one its saves left, or one made of its
    /// jid, name and arguments (a run's saves are written into it).
    pub(crate) fn payload_text(&self) -> String {
        match &self.payload {
            Some(text) => text.clone(),
            None => serde_json::json!({
                "jid": self.job.jid,
                "job": self.job.job,
                "args": self.job.args,
            })
            .to_string(),
        }
    }

    /// Whether a drain at `now` may run it: its due time has come, and `now` is inside one of
    /// its job's windows, if it has any.
    pub(crate) fn is_due(&mut self, now: SystemTime) -> bool {
        self.job.due.is_none_or(|due| due <= now) && self.in_window(now)
    }

    fn in_window(&mut self, now: SystemTime) -> bool {
        let Some(windows) = &self.windows else {
            return true;
        };
        let now = i64::try_from(to_ms(now)).unwrap_or(i64::MAX);
        if self.window.is_none_or(|(_, close)| close <= now) {
            self.window = windows.current_or_next(now);
        }
        self.window.is_some_and(|(open, _)| open <= now)
    }
}
