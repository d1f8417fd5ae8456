//! One call to Redis for the processors that need the same call at the same moment: the
//! successes of one in-flight list ([`crate::settle`]'s group commit), the fetches of idle
//! processors from one queue ([`crate::fetcher`]).
//!
//! The first caller to arrive at a queue's [`Gather`] leads: it yields once to the scheduler,
//! so that the processors woken with it (by the same reply, the same burst) reach the same
//! point and join, then makes one call for itself and every caller that joined (at most
//! `max`; any more go as further batches, each led by its first), and hands each its answer.
//! Calls are not held back while another is on its way: a batch is what gathered during one
//! yield, so a lone caller waits for nothing but that yield. (Holding the next call until the
//! last one returned made bigger batches, but left a worker with ten processors waiting more
//! than working: `gator-bench process` ran 10-20 % slower.)
//!
//! The yield itself only pays with many processors: a worker with fewer than [`LINGER_FROM`]
//! makes each call at once (a batch is then only what met by chance). Measured with
//! `gator-bench process 50000`, the yield against none, alternating: 0.69–0.92× at
//! concurrency 10 (6 rounds), even at 20, 0.98–1.72× at 40 and 1.2–2.4× at 100.

use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// The number of processors from which a worker's leaders yield to let others join.
pub const LINGER_FROM: usize = 20;

/// One [`Gather`] per queue (or in-flight list), made on first use.
pub struct Gathers<M, A> {
    gathers: Mutex<FxHashMap<String, Arc<Gather<M, A>>>>,
    /// Whether the leaders yield once before their call (see the module docs).
    linger: bool,
}

/// The callers of one queue waiting for their leader's call.
pub struct Gather<M, A> {
    state: Mutex<State<M, A>>,
    linger: bool,
}

struct State<M, A> {
    /// Whether a leader is letting callers gather, about to make its call.
    gathering: bool,
    waiting: Vec<(M, oneshot::Sender<Reply<M, A>>)>,
}

/// A batch's members, each beside where its answer goes (`None`: the leader's own).
type Batch<M, A> = Vec<(M, Option<oneshot::Sender<Reply<M, A>>>)>;

/// What a waiting caller gets: its answer, or the lead of a batch.
enum Reply<M, A> {
    Answer(A),
    Lead(Batch<M, A>),
}

/// What joining got a caller.
pub enum Joined<M, A> {
    /// Its answer, from another caller's call.
    Answer(A),
    /// The lead: make one call for these members, the caller's own among them, then give the
    /// answers to [`Replies::send`].
    Lead(Vec<M>, Replies<M, A>),
    /// The caller that led its batch went away before answering (a panic): the caller's
    /// member is lost with it.
    Lost,
}

/// Where each member's answer of a batch goes, in the members' order (`None`: the leader).
pub struct Replies<M, A>(Vec<Option<oneshot::Sender<Reply<M, A>>>>);

impl<M, A> Gathers<M, A> {
    /// The gathers of a worker with `processors` processors: their leaders yield before their
    /// call from [`LINGER_FROM`] processors on.
    pub fn for_processors(processors: usize) -> Self {
        Gathers {
            gathers: Mutex::default(),
            linger: processors >= LINGER_FROM,
        }
    }

    /// The gather of `queue`.
    pub fn of(&self, queue: &str) -> Arc<Gather<M, A>> {
        let mut gathers = self.gathers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(gather) = gathers.get(queue) {
            return gather.clone();
        }
        let gather = Arc::new(Gather {
            state: Mutex::new(State {
                gathering: false,
                waiting: Vec::new(),
            }),
            linger: self.linger,
        });
        gathers.insert(queue.to_owned(), gather.clone());
        gather
    }
}

impl<M, A> std::fmt::Debug for Gathers<M, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gathers = self.gathers.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("Gathers")
            .field("queues", &gathers.len())
            .field("linger", &self.linger)
            .finish()
    }
}

impl<M, A> Gather<M, A> {
    /// Joins the next call with `member` (see the module docs); at most `max` members a call.
    pub async fn join(&self, member: M, max: usize) -> Joined<M, A> {
        let waiting = {
            let mut state = self.lock();
            if state.gathering {
                let (tx, rx) = oneshot::channel();
                state.waiting.push((member, tx));
                Err(rx)
            } else {
                state.gathering = true;
                Ok(member)
            }
        };
        let batch = match waiting {
            Ok(member) => {
                if self.linger {
                    tokio::task::yield_now().await;
                }
                self.gathered(member, max.max(1))
            }
            Err(rx) => match rx.await {
                Ok(Reply::Answer(answer)) => return Joined::Answer(answer),
                Ok(Reply::Lead(batch)) => batch,
                Err(_) => return Joined::Lost,
            },
        };
        let (members, replies) = batch.into_iter().unzip();
        Joined::Lead(members, Replies(replies))
    }

    /// Ends the gathering `leader` started: its batch is `leader` and the first callers that
    /// joined (at most `max` in all). Any beyond go as further batches, each led by its first.
    fn gathered(&self, leader: M, max: usize) -> Batch<M, A> {
        let mut state = self.lock();
        state.gathering = false;
        let mut joined = std::mem::take(&mut state.waiting)
            .into_iter()
            .map(|(member, reply)| (member, Some(reply)));
        drop(state);
        let mut batch = vec![(leader, None)];
        batch.extend(joined.by_ref().take(max - 1));
        let mut rest: Vec<_> = joined.collect();
        while !rest.is_empty() {
            let after = rest.split_off(rest.len().min(max));
            hand_lead(rest);
            rest = after;
        }
        batch
    }

    fn lock(&self) -> MutexGuard<'_, State<M, A>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<M, A> Replies<M, A> {
    /// Gives each member its answer (`answers` in the members' order); returns the leader's.
    pub fn send(self, answers: impl IntoIterator<Item = A>) -> Option<A> {
        let mut own = None;
        for (reply, answer) in self.0.into_iter().zip(answers) {
            match reply {
                // A caller gone meanwhile cannot take its answer: nothing to do.
                Some(reply) => drop(reply.send(Reply::Answer(answer))),
                None => own = Some(answer),
            }
        }
        own
    }
}

/// Hands `batch` to its first member still there, to make its call: that member's own entry
/// loses its reply, as a leader's has none.
fn hand_lead<M, A>(mut batch: Batch<M, A>) {
    while !batch.is_empty() {
        let Some(next) = batch[0].1.take() else {
            unreachable!("every waiting caller has a reply");
        };
        match next.send(Reply::Lead(batch)) {
            Ok(()) => return,
            // Its caller is gone (and its member with it): the next one leads.
            Err(Reply::Lead(back)) => {
                batch = back;
                batch.remove(0);
            }
            Err(Reply::Answer(_)) => unreachable!("a lead was sent"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Joins `gather` as member `n`; a leader answers each member with its number and the
    /// size of its batch.
    async fn ask(gather: Arc<Gather<u32, (u32, usize)>>, n: u32, max: usize) -> (u32, usize) {
        match gather.join(n, max).await {
            Joined::Answer(answer) => answer,
            Joined::Lead(members, replies) => {
                let size = members.len();
                replies
                    .send(members.into_iter().map(|m| (m, size)))
                    .expect("the leader's own answer")
            }
            Joined::Lost => panic!("no leader went away"),
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn callers_that_arrive_together_share_one_call_and_each_gets_its_own_answer() {
        let gather = Gathers::for_processors(LINGER_FROM).of("q");
        let asks: Vec<_> = (0..10)
            .map(|n| tokio::spawn(ask(gather.clone(), n, 100)))
            .collect();
        for (n, ask) in asks.into_iter().enumerate() {
            assert_eq!(ask.await.unwrap(), (n as u32, 10), "all ten in one batch");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn with_few_processors_each_caller_calls_at_once() {
        let gather = Gathers::for_processors(LINGER_FROM - 1).of("q");
        let asks: Vec<_> = (0..10)
            .map(|n| tokio::spawn(ask(gather.clone(), n, 100)))
            .collect();
        for (n, ask) in asks.into_iter().enumerate() {
            assert_eq!(ask.await.unwrap(), (n as u32, 1), "no yield, no batch");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_lone_caller_makes_its_own_call() {
        let gather = Gathers::for_processors(LINGER_FROM).of("q");
        assert_eq!(ask(gather.clone(), 7, 100).await, (7, 1));
        assert_eq!(ask(gather, 8, 100).await, (8, 1));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn more_callers_than_a_call_takes_go_as_several_batches_each_led() {
        let gather = Gathers::for_processors(LINGER_FROM).of("q");
        let asks: Vec<_> = (0..10)
            .map(|n| tokio::spawn(ask(gather.clone(), n, 4)))
            .collect();
        let mut sizes = Vec::new();
        for ask in asks {
            sizes.push(ask.await.unwrap().1);
        }
        assert_eq!(sizes, [4, 4, 4, 4, 4, 4, 4, 4, 2, 2]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn callers_whose_leader_gives_up_are_told_so() {
        let gather = Gathers::<u32, ()>::for_processors(LINGER_FROM).of("q");
        let leader = {
            let gather = gather.clone();
            // Leads, then drops its replies without answering (as a failed call does).
            tokio::spawn(async move { matches!(gather.join(0, 10).await, Joined::Lead(..)) })
        };
        let follower = {
            let gather = gather.clone();
            tokio::spawn(async move { matches!(gather.join(1, 10).await, Joined::Lost) })
        };
        assert!(leader.await.unwrap(), "the first caller leads");
        assert!(
            follower.await.unwrap(),
            "the second learns its call is lost"
        );
    }
}
