//! Admission from controlled queues (see `gator_core::flow`), by group commit.
//!
//! Every processor of this process that reaches a controlled queue, to settle a success, to
//! fetch its next job, or both, hands a request to the queue's group. While a call to the
//! queue is in flight, requests gather; when it returns, one of the waiting processors sends
//! them all in one `admit.lua` call, which settles every success and admits one job for each
//! processor that wants one. A worker draining a controlled queue thus makes one call per batch
//! of jobs, not one per job (Redis's single thread, not the round trip, was what made flow
//! control slow), and a call in flight is never waited for by more than one batch. Each job
//! still follows its own processor's draw of the queue weights: a processor asks for a job only
//! when its draw picked the queue.
//!
//! 1. A processor adds its request to the group's pending list.
//! 2. If no call is in flight, it takes the pending requests (up to [`MAX_GROUP`]) and makes
//!    the call; else it waits until the call in flight ends, and looks again: its request may
//!    have gone out with that call, and then its answer is there.
//! 3. The caller hands each request its answer: whether its success was settled, and its job,
//!    held for it before it is handed over (so recovery never takes it for stranded).
//!
//! If the caller is cancelled mid-call, the requests it took are answered with an error: a
//! success is then written again the usual way (which finds it settled, or settles it), and a
//! job admitted for nobody stays unheld in flight, where recovery puts it back.

use crate::held::Held;
use crate::leases::Leases;
use gator_core::Client;
use gator_core::store::admit::{self, AdmitRequest, Admitted, MAX_ACKS, NextLook, WindowInterval};
use gator_core::store::inflight::Fetched;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};

/// The most requests one call carries: within [`MAX_ACKS`] successes and
/// `gator_core::store::inflight::MAX_BATCH` jobs, and short enough to keep Redis responsive.
pub const MAX_GROUP: usize = 256;

const _: () = assert!(MAX_GROUP <= MAX_ACKS);

/// How many calls to one queue a process has in flight at once. Two: while Redis runs one,
/// the next gathers its requests and is sent as soon as it is ready, so the queue's calls
/// follow each other on Redis without a round trip's gap; more would only split the batches.
pub const MAX_CALLS: usize = 2;

/// The admissions of one worker process, one group per controlled queue.
pub struct Admission {
    client: Client,
    leases: Arc<Leases>,
    held: Arc<Held>,
    process: String,
    groups: Mutex<HashMap<String, Arc<Group>>>,
    /// Each controlled queue's time-window interval, as last computed for `admit.lua`.
    windows: Mutex<HashMap<String, WindowInterval>>,
}

/// What one processor's request got.
#[derive(Debug)]
pub struct Turn {
    /// Whether its success was in flight and is now settled (false if it gave none).
    pub acked: bool,
    /// Its jobs (at most as many as it asked for), held for it.
    pub jobs: Vec<Fetched>,
    /// Redis time of the decision, ms.
    pub now_ms: u64,
    /// When to look again, if it got no job.
    pub next: NextLook,
}

struct Request {
    ack: Option<Fetched>,
    want: usize,
    answer: oneshot::Sender<gator_core::Result<Turn>>,
}

#[derive(Default)]
struct Group {
    state: Mutex<GroupState>,
    /// Notified when a call ends.
    done: Notify,
}

#[derive(Default)]
struct GroupState {
    pending: Vec<Request>,
    /// Calls in flight.
    calling: usize,
}

impl Group {
    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Marks a group's call in flight until dropped (also when the caller is cancelled), then
/// wakes the processors waiting to send the next one.
struct Calling<'a>(&'a Group);

impl Drop for Calling<'_> {
    fn drop(&mut self) {
        self.0.lock().calling -= 1;
        self.0.done.notify_waiters();
    }
}

impl Admission {
    /// The admissions of process `process`, which holds the jobs it admits in `held`.
    pub fn new(client: Client, leases: Arc<Leases>, held: Arc<Held>, process: String) -> Admission {
        Admission {
            client,
            leases,
            held,
            process,
            groups: Mutex::new(HashMap::new()),
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Settles `ack` (a success of this process on controlled `queue`), if given, and admits
    /// up to `want` jobs of `queue` for the caller, in one call shared with every processor
    /// that reached the queue meanwhile (see the module docs).
    pub async fn admit(
        &self,
        queue: &str,
        ack: Option<Fetched>,
        want: usize,
    ) -> gator_core::Result<Turn> {
        let group = self.group(queue);
        let (answer, mut answered) = oneshot::channel();
        group.lock().pending.push(Request { ack, want, answer });
        loop {
            // Registered before looking, so the end of a call between the look and the wait
            // is not missed.
            let done = group.done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            let batch = {
                let mut state = group.lock();
                if state.calling >= MAX_CALLS || state.pending.is_empty() {
                    None
                } else {
                    state.calling += 1;
                    let n = state.pending.len().min(MAX_GROUP);
                    Some(state.pending.drain(..n).collect::<Vec<_>>())
                }
            };
            if let Some(batch) = batch {
                let _calling = Calling(&group);
                self.call(queue, batch).await;
            }
            tokio::select! {
                biased;
                turn = &mut answered => return turn.unwrap_or_else(|_| Err(abandoned())),
                _ = &mut done => {}
            }
        }
    }

    fn group(&self, queue: &str) -> Arc<Group> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        groups.entry(queue.to_owned()).or_default().clone()
    }

    /// One call for `batch`, and each request's answer.
    async fn call(&self, queue: &str, batch: Vec<Request>) {
        let acks: Vec<&Fetched> = batch.iter().filter_map(|r| r.ack.as_ref()).collect();
        let want = batch.iter().map(|r| r.want).sum();
        let (acked, result) = self.admit_all(queue, &acks, want).await;
        let mut acked = acked.into_iter();
        let (mut jobs, now_ms, next, error) = match result {
            Ok(admitted) => (
                admitted.jobs.into_iter(),
                admitted.now_ms,
                admitted.next,
                None,
            ),
            Err(e) => (Vec::new().into_iter(), 0, NextLook::Now, Some(e)),
        };
        for request in batch {
            // Whether its success was settled; None if it gave none, or no call got through.
            let settled = request.ack.as_ref().and_then(|_| acked.next());
            let turn = match (&error, settled) {
                (None, settled) => {
                    let mine: Vec<Fetched> = jobs.by_ref().take(request.want).collect();
                    self.held.hold(&mine);
                    Ok(Turn {
                        acked: settled.unwrap_or(false),
                        jobs: mine,
                        now_ms,
                        next,
                    })
                }
                // Its success was settled, then the admission failed: the processor fetches
                // again the usual way.
                (Some(_), Some(acked)) => Ok(Turn {
                    acked,
                    jobs: Vec::new(),
                    now_ms,
                    next,
                }),
                (Some(e), None) => Err(share(e)),
            };
            if let Err(Ok(turn)) = request.answer.send(turn) {
                // Its processor is gone: its job is left in flight, for recovery.
                for job in &turn.jobs {
                    self.held.settled(job);
                }
            }
        }
    }

    /// `admit.lua` on `queue` until it gives an answer to hand out: takes the lease first if
    /// this process holds none (units are leased with it), a shared limiter's start when a job
    /// needs one, and the queue's window interval when it is missing or stale. The successes
    /// go with the first call only. Returns, beside the result, whether each success was
    /// settled (empty if no call got through).
    async fn admit_all(
        &self,
        queue: &str,
        acks: &[&Fetched],
        want: usize,
    ) -> (Vec<bool>, gator_core::Result<Admitted>) {
        let keys = self.client.keys();
        let mut conn = self.client.connection();
        let mut acked = Vec::new();
        let mut acks = acks;
        let (mut retried, mut shared) = (false, None);
        let result = loop {
            if want > 0
                && !self.leases.valid_for(queue, Duration::ZERO)
                && let Err(e) = self.leases.acquire(queue).await
            {
                break Err(e);
            }
            let window = self.lock_windows().get(queue).cloned();
            let shared_start = shared.take();
            let request = AdmitRequest {
                queue,
                process: &self.process,
                max: want,
                window: window.as_ref(),
                acks,
                shared: shared_start.as_ref(),
            };
            let admitted = match admit::admit(&mut conn, keys, &request).await {
                Ok(admitted) => admitted,
                Err(e) => break Err(e),
            };
            if !acks.is_empty() {
                acked = admitted.acked.clone();
                acks = &[];
            }
            if let Some((name, cost)) = &admitted.needs_shared {
                // A shared limiter lives on its own slot: take its start there, then admit.
                match admit::take_shared(&mut conn, keys, name, *cost).await {
                    Ok(start) => shared = Some(start),
                    Err(e) => break Err(e),
                }
                continue;
            }
            if let Some(windows) = &admitted.windows {
                // The queue has time windows, and ours were missing or stale.
                let interval = WindowInterval::around(windows, admitted.now_ms);
                self.lock_windows().insert(queue.to_owned(), interval);
                continue;
            }
            if admitted.no_lease && !retried {
                if let Err(e) = self.leases.acquire(queue).await {
                    break Err(e);
                }
                retried = true;
                continue;
            }
            // A call that only parked part of a backlog found nothing yet: go on at once.
            if want > 0 && admitted.jobs.is_empty() && admitted.next == NextLook::Now {
                continue;
            }
            break Ok(admitted);
        };
        (acked, result)
    }

    fn lock_windows(&self) -> MutexGuard<'_, HashMap<String, WindowInterval>> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("process", &self.process)
            .finish_non_exhaustive()
    }
}

/// The error of a call, for each request it carried (the caller keeps the original).
fn share(error: &gator_core::Error) -> gator_core::Error {
    match error {
        gator_core::Error::Redis(e) => gator_core::Error::Redis(e.clone()),
        other => redis_io(other.to_string()),
    }
}

/// The answer of a request whose call was abandoned (its caller was cancelled).
fn abandoned() -> gator_core::Error {
    redis_io("the admit call carrying this request was abandoned".to_owned())
}

fn redis_io(message: String) -> gator_core::Error {
    gator_core::Error::Redis(redis::RedisError::from(std::io::Error::other(message)))
}
