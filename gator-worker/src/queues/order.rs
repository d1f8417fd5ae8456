//! The order to try the served queues in for each fetch: strict, weighted shuffle, or every
//! known queue shuffled; a sharded queue's lists stand in for it.

use super::QueueSelection;
use gator_core::Client;
use gator_core::shards::{logical_queue, shard_queue};
use rand::RngExt;
use rand::seq::SliceRandom;
use std::collections::{HashMap, HashSet};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// The queues a worker serves and the order to try them in.
///
/// It orders *queues*; each fetch order then lists every Redis list a queue is stored as: the
/// queue itself and, if it is sharded, its shards (`default#0` …, in random order, see
/// [`gator_core::shards`]). So weights and strict order apply to a sharded queue as a whole.
#[derive(Debug)]
pub struct QueueOrder {
    selection: QueueSelection,
    /// What Redis said at the last [`QueueOrder::refresh`].
    stored: RwLock<Stored>,
    /// The queues known to be under flow control ([`gator_core::flow`]): fetched with
    /// `admit.lua`, and waited on through their signal list. It only grows (a queue stays
    /// controlled once it is), from the global set at each refresh and from a `fetch.lua` that
    /// answered "controlled".
    controlled: RwLock<HashSet<String>>,
    /// Counts the refreshes that found a list not served before: a processor that found
    /// nothing to fetch parks only if it has not moved since its pass ([`QueueOrder::grown`]).
    generation: AtomicU64,
    /// Wakes the parked processors when a refresh finds a list not served before.
    grew: Notify,
    /// The jobs this worker passes over on lists it shares with workers that run them.
    passing: super::Passing,
}

/// The queues and shards as last read from Redis.
#[derive(Debug, Default, PartialEq, Eq)]
struct Stored {
    /// For [`QueueSelection::AllKnown`]: the queues of the known-queues set (shards folded
    /// into their queue).
    known: Vec<String>,
    /// Each served queue stored as more than one list: every list to drain (the queue itself,
    /// its shards by the count in Redis, and shards the known-queues set still lists).
    lists: HashMap<String, Vec<String>>,
}

impl Stored {
    /// Whether this serves a queue or a list that `before` did not.
    fn adds_to(&self, before: &Stored) -> bool {
        let new_queue = self.known.iter().any(|q| !before.known.contains(q));
        let new_list = self
            .lists
            .iter()
            .any(|(queue, lists)| match before.lists.get(queue) {
                Some(old) => lists.iter().any(|l| !old.contains(l)),
                None => true,
            });
        new_queue || new_list
    }
}

impl QueueOrder {
    /// The order for `selection`; with `AllKnown` it is empty until [`QueueOrder::refresh`],
    /// and every queue is one list until then.
    pub fn new(selection: QueueSelection) -> QueueOrder {
        QueueOrder {
            selection,
            stored: RwLock::new(Stored::default()),
            controlled: RwLock::new(HashSet::new()),
            generation: AtomicU64::new(0),
            grew: Notify::new(),
            passing: super::Passing::default(),
        }
    }

    /// The jobs this worker passes over, per list (see [`super::passing`]).
    pub fn passing(&self) -> &super::Passing {
        &self.passing
    }

    /// How many times the lists served grew (a queue discovered, a queue sharded): read before a
    /// fetch pass, and compared after registering on [`QueueOrder::grown`], so that a growth
    /// between the pass and the wait is not missed.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Notified when a refresh finds a list not served before: processors that found nothing to
    /// fetch park on it (with no queue known, the first queue discovered must wake them: they
    /// have nothing to block on).
    pub fn grown(&self) -> &Notify {
        &self.grew
    }

    /// Whether `queue` is known to be under flow control.
    pub fn is_controlled(&self, queue: &str) -> bool {
        self.controlled
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(queue)
    }

    /// Whether `queue` is split into several lists (shards).
    pub fn is_sharded(&self, queue: &str) -> bool {
        self.stored().lists.contains_key(queue)
    }

    /// Records that `queue` is under flow control (a fetch found it so before a refresh did).
    pub fn mark_controlled(&self, queue: &str) {
        if !self.is_controlled(queue) {
            self.controlled
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(queue.to_owned());
        }
    }

    /// Re-reads the known-queues set and the shard counts.
    pub async fn refresh(&self, client: &Client) -> gator_core::Result<()> {
        let mut upkeep = crate::door::upkeep(client);
        let known_lists = upkeep.known_queues().await?;
        let counts = upkeep.shards().await?;
        let controlled = crate::door::upkeep(client).controlled().await?;
        self.controlled
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .extend(controlled);
        let mut known: Vec<String> = Vec::new();
        for list in &known_lists {
            let queue = logical_queue(list);
            if !known.iter().any(|k| k == queue) {
                known.push(queue.to_owned());
            }
        }
        let served = match &self.selection {
            QueueSelection::AllKnown => known.clone(),
            _ => self.queues(),
        };
        let mut lists = HashMap::new();
        for queue in served {
            let mut stored = vec![queue.clone()];
            let count = counts.get(&queue).copied().unwrap_or(1);
            if count > 1 {
                stored.extend((0..count).map(|shard| shard_queue(&queue, shard)));
            }
            for list in &known_lists {
                if logical_queue(list) == queue && !stored.contains(list) {
                    stored.push(list.clone());
                }
            }
            if stored.len() > 1 {
                lists.insert(queue, stored);
            }
        }
        let fresh = Stored { known, lists };
        let grew = {
            let mut stored = self.stored.write().unwrap_or_else(|e| e.into_inner());
            let grew = fresh.adds_to(&stored);
            *stored = fresh;
            grew
        };
        if grew {
            self.generation.fetch_add(1, Ordering::AcqRel);
            self.grew.notify_waiters();
        }
        Ok(())
    }

    /// The queues served (each possibly stored as several lists), in a stable order.
    fn queues(&self) -> Vec<String> {
        match &self.selection {
            QueueSelection::Strict(q) => q.clone(),
            QueueSelection::Weighted(q) => q.iter().map(|(name, _)| name.clone()).collect(),
            QueueSelection::AllKnown => self.stored().known.clone(),
        }
    }

    /// The lists of `queues`, in that order; a sharded queue's lists shuffled when `shuffle`.
    fn lists_of(&self, queues: Vec<String>, shuffle: bool) -> Vec<String> {
        let stored = self.stored();
        if stored.lists.is_empty() {
            return queues; // no queue is sharded: the common case costs no copy
        }
        let mut rng = rand::rng();
        let mut order = Vec::with_capacity(queues.len());
        for queue in queues {
            match stored.lists.get(&queue) {
                Some(lists) => {
                    let start = order.len();
                    order.extend(lists.iter().cloned());
                    if shuffle {
                        order[start..].shuffle(&mut rng);
                    }
                }
                None => order.push(queue),
            }
        }
        order
    }

    /// Every list served, in a stable order (the poller promotes due jobs into these, and
    /// recovery and leases cover them).
    pub fn all(&self) -> Vec<String> {
        self.lists_of(self.queues(), false)
    }

    /// How many lists are served.
    pub fn len(&self) -> usize {
        let stored = self.stored();
        let queues = match &self.selection {
            QueueSelection::Strict(q) => q.len(),
            QueueSelection::Weighted(q) => q.len(),
            QueueSelection::AllKnown => stored.known.len(),
        };
        queues + stored.lists.values().map(|l| l.len() - 1).sum::<usize>()
    }

    /// Whether no queue is served (yet: see [`QueueOrder::refresh`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queue a fresh [`QueueOrder::next_order`] would try first, drawn with the same odds
    /// without building the whole order: a queue comes first with probability weight / total
    /// weight (always the first, in strict order; uniformly, among every known queue). With
    /// [`QueueOrder::order_starting_with`], the two give an order of the same odds as
    /// `next_order`. It names a queue, not a shard: compare with [`logical_queue`].
    pub fn draw_first(&self) -> Option<String> {
        let mut rng = rand::rng();
        match &self.selection {
            QueueSelection::Strict(q) => q.first().cloned(),
            QueueSelection::Weighted(q) => {
                let total: u64 = q.iter().map(|(_, w)| u64::from(*w)).sum();
                let mut draw = rng.random_range(0..total.max(1));
                for (name, weight) in q {
                    if draw < u64::from(*weight) {
                        return Some(name.clone());
                    }
                    draw -= u64::from(*weight);
                }
                None
            }
            QueueSelection::AllKnown => {
                let stored = self.stored();
                (!stored.known.is_empty())
                    .then(|| stored.known[rng.random_range(0..stored.known.len())].clone())
            }
        }
    }

    /// The lists for one fetch whose first queue was already drawn
    /// ([`QueueOrder::draw_first`]): `first`'s lists, then the others as
    /// [`QueueOrder::next_order`] would order them.
    pub fn order_starting_with(&self, first: &str) -> Vec<String> {
        let mut rng = rand::rng();
        let mut order = vec![first.to_owned()];
        match &self.selection {
            QueueSelection::Strict(q) => order.extend(q.iter().filter(|n| *n != first).cloned()),
            QueueSelection::Weighted(q) => {
                let rest: Vec<(String, u32)> =
                    q.iter().filter(|(n, _)| n != first).cloned().collect();
                order.extend(weighted_shuffle(&rest, &mut rng));
            }
            QueueSelection::AllKnown => {
                let mut rest: Vec<String> =
                    self.queues().into_iter().filter(|n| n != first).collect();
                rest.shuffle(&mut rng);
                order.extend(rest);
            }
        }
        self.lists_of(order, true)
    }

    /// The lists to try, in order, for one fetch.
    pub fn next_order(&self) -> Vec<String> {
        let mut rng = rand::rng();
        let order = match &self.selection {
            QueueSelection::Strict(q) => q.clone(),
            QueueSelection::Weighted(q) => weighted_shuffle(q, &mut rng),
            QueueSelection::AllKnown => {
                let mut queues = self.queues();
                queues.shuffle(&mut rng);
                queues
            }
        };
        self.lists_of(order, true)
    }

    fn stored(&self) -> std::sync::RwLockReadGuard<'_, Stored> {
        self.stored.read().unwrap_or_else(|e| e.into_inner())
    }
}

/// Orders `queues` by weighted random sampling without replacement (Efraimidis–Spirakis:
/// sort by `u^(1/w)`): a queue comes first with probability weight / total weight, and each
/// later place likewise among the rest, so a heavy queue is favoured and a light one never starves.
pub fn weighted_shuffle(queues: &[(String, u32)], rng: &mut impl rand::Rng) -> Vec<String> {
    let mut keyed: Vec<(f64, &str)> = queues
        .iter()
        .map(|(name, weight)| {
            (
                rng.random::<f64>().powf(1.0 / f64::from(*weight)),
                name.as_str(),
            )
        })
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    keyed.into_iter().map(|(_, name)| name.to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_shuffle_puts_a_queue_first_in_proportion_to_its_weight() {
        let queues = vec![("high".to_owned(), 3), ("default".to_owned(), 1)];
        let mut rng = rand::rng();
        let draws = 40_000;
        let high_first = (0..draws)
            .filter(|_| weighted_shuffle(&queues, &mut rng)[0] == "high")
            .count();
        let share = high_first as f64 / draws as f64;
        // Expected 0.75; the standard deviation over 40k draws is about 0.002.
        assert!(
            (share - 0.75).abs() < 0.015,
            "high came first {share:.3} of the time"
        );
    }

    #[test]
    fn weighted_shuffle_keeps_every_queue_once() {
        let queues = vec![
            ("a".to_owned(), 5),
            ("b".to_owned(), 1),
            ("c".to_owned(), 2),
        ];
        let mut order = weighted_shuffle(&queues, &mut rand::rng());
        order.sort();
        assert_eq!(order, vec!["a", "b", "c"]);
    }

    #[test]
    fn the_first_queue_is_drawn_with_the_odds_of_the_weighted_shuffle() {
        let order = QueueOrder::new(QueueSelection::Weighted(vec![
            ("high".into(), 3),
            ("default".into(), 1),
        ]));
        let draws = 40_000;
        let high = (0..draws)
            .filter(|_| order.draw_first().as_deref() == Some("high"))
            .count();
        let share = high as f64 / draws as f64;
        assert!(
            (share - 0.75).abs() < 0.015,
            "high drawn first {share:.3} of the time"
        );
        assert_eq!(
            order.order_starting_with("default"),
            vec!["default", "high"]
        );
        let strict = QueueOrder::new(QueueSelection::Strict(vec!["a".into(), "b".into()]));
        assert_eq!(strict.draw_first().as_deref(), Some("a"));
        assert_eq!(strict.order_starting_with("b"), vec!["b", "a"]);
    }

    #[test]
    fn strict_order_is_always_the_given_order() {
        let order = QueueOrder::new(QueueSelection::Strict(vec![
            "critical".into(),
            "default".into(),
        ]));
        for _ in 0..100 {
            assert_eq!(order.next_order(), vec!["critical", "default"]);
        }
    }
}
