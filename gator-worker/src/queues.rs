//! The queues a worker serves: the `--queues` spec ([`QueueSelection`]), the order to try them
//! in for each fetch (strict, weighted shuffle, or every known queue: [`QueueOrder`]), and which
//! queue each idle processor watches ([`Watchers`]). The config parses the spec here; the
//! fetcher, the poller and recovery all take their queues from one [`QueueOrder`].

use gator_core::Client;
use gator_core::shards::{logical_queue, shard_queue};
use rand::RngExt;
use rand::seq::SliceRandom;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::{Mutex, RwLock};

/// Which queues a worker takes jobs from, and in what order it tries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueSelection {
    /// `critical,default`: always try the first non-empty queue in this order.
    Strict(Vec<String>),
    /// `high:3,default:1`: each fetch orders the queues by weighted random shuffle, so
    /// `high` is tried first three times as often as `default`, and no queue starves.
    Weighted(Vec<(String, u32)>),
    /// No `--queues`: every queue in the known-queues set, shuffled with equal weights.
    AllKnown,
}

/// Why a `--queues` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueueSpecError(String);

impl FromStr for QueueSelection {
    type Err = QueueSpecError;

    /// Parses `name[:weight],...`. Any weight makes the selection weighted (a queue without
    /// one weighs 1); no weight at all means strict order.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let mut queues: Vec<(String, Option<u32>)> = Vec::new();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = match part.split_once(':') {
                Some((name, w)) => {
                    let weight = w
                        .trim()
                        .parse::<u32>()
                        .ok()
                        .filter(|w| *w >= 1)
                        .ok_or_else(|| {
                            QueueSpecError(format!(
                                "weight {w:?} of queue {name:?} must be a whole number from 1 up"
                            ))
                        })?;
                    (name.trim(), Some(weight))
                }
                None => (part, None),
            };
            gator_core::store::keys::validate_queue(name)
                .map_err(|e| QueueSpecError(e.to_string()))?;
            if queues.iter().any(|(q, _)| q == name) {
                return Err(QueueSpecError(format!("queue {name:?} is listed twice")));
            }
            queues.push((name.to_owned(), weight));
        }
        if queues.is_empty() {
            return Err(QueueSpecError(
                "no queue named: use e.g. `high:3,default:1` or `critical,default`".into(),
            ));
        }
        if queues.iter().all(|(_, w)| w.is_none()) {
            Ok(QueueSelection::Strict(
                queues.into_iter().map(|(q, _)| q).collect(),
            ))
        } else {
            Ok(QueueSelection::Weighted(
                queues
                    .into_iter()
                    .map(|(q, w)| (q, w.unwrap_or(1)))
                    .collect(),
            ))
        }
    }
}

impl fmt::Display for QueueSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueSelection::Strict(q) => f.write_str(&q.join(",")),
            QueueSelection::Weighted(q) => {
                let parts: Vec<String> = q.iter().map(|(n, w)| format!("{n}:{w}")).collect();
                f.write_str(&parts.join(","))
            }
            QueueSelection::AllKnown => f.write_str("(every known queue)"),
        }
    }
}

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
}

/// The queues and shards as last read from Redis.
#[derive(Debug, Default)]
struct Stored {
    /// For [`QueueSelection::AllKnown`]: the queues of the known-queues set (shards folded
    /// into their queue).
    known: Vec<String>,
    /// Each served queue stored as more than one list: every list to drain (the queue itself,
    /// its shards by the count in Redis, and shards the known-queues set still lists).
    lists: HashMap<String, Vec<String>>,
}

impl QueueOrder {
    /// The order for `selection`; with `AllKnown` it is empty until [`QueueOrder::refresh`],
    /// and every queue is one list until then.
    pub fn new(selection: QueueSelection) -> QueueOrder {
        QueueOrder {
            selection,
            stored: RwLock::new(Stored::default()),
            controlled: RwLock::new(HashSet::new()),
        }
    }

    /// Whether `queue` is known to be under flow control.
    pub fn is_controlled(&self, queue: &str) -> bool {
        self.controlled
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(queue)
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
        let (keys, mut conn) = (client.keys(), client.connection());
        let known_lists = gator_core::store::queue::known(&mut conn, keys).await?;
        let counts = gator_core::store::shards::all(&mut conn, keys).await?;
        let controlled =
            gator_core::store::flow::controlled(&mut client.connection(), client.keys()).await?;
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
        *self.stored.write().unwrap_or_else(|e| e.into_inner()) = Stored { known, lists };
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

/// How many idle processors watch (block on) each queue, so that the next one to block picks
/// a queue nobody watches: with at least as many blocking processors as queues, every queue is
/// watched and a job pushed to any of them starts at once.
#[derive(Debug, Default)]
pub struct Watchers {
    counts: Mutex<HashMap<String, usize>>,
}

impl Watchers {
    /// Picks the queue to watch among `candidates` (in order of preference: the fetch's
    /// weighted order): the least watched one, the first such on a tie. Counts it watched
    /// until [`Watchers::unwatch`].
    pub fn watch(&self, candidates: &[String]) -> Option<String> {
        let mut counts = self.lock();
        let chosen = candidates
            .iter()
            .min_by_key(|queue| counts.get(queue.as_str()).copied().unwrap_or(0))?
            .clone();
        *counts.entry(chosen.clone()).or_default() += 1;
        Some(chosen)
    }

    /// A processor stopped watching `queue`.
    pub fn unwatch(&self, queue: &str) {
        let mut counts = self.lock();
        if let Some(count) = counts.get_mut(queue) {
            *count -= 1;
            if *count == 0 {
                counts.remove(queue);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        // A poisoned lock only means a panic between two whole-entry operations.
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<QueueSelection, QueueSpecError> {
        s.parse()
    }

    #[test]
    fn weights_make_a_weighted_selection_and_missing_weights_count_as_one() {
        assert_eq!(
            parse("high:3,default:1").expect("valid"),
            QueueSelection::Weighted(vec![("high".into(), 3), ("default".into(), 1)])
        );
        assert_eq!(
            parse("high:3, low").expect("valid"),
            QueueSelection::Weighted(vec![("high".into(), 3), ("low".into(), 1)])
        );
    }

    #[test]
    fn no_weights_means_strict_order() {
        assert_eq!(
            parse("critical,default").expect("valid"),
            QueueSelection::Strict(vec!["critical".into(), "default".into()])
        );
    }

    #[test]
    fn bad_specs_are_refused_with_the_reason() {
        assert!(parse("").unwrap_err().to_string().contains("no queue"));
        assert!(parse("high:0").unwrap_err().to_string().contains("weight"));
        assert!(parse("high:x").unwrap_err().to_string().contains("weight"));
        assert!(
            parse("a{b}")
                .unwrap_err()
                .to_string()
                .contains("invalid queue name")
        );
        assert!(parse("a,a").unwrap_err().to_string().contains("twice"));
    }

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
    fn blocking_processors_spread_over_every_queue_before_any_is_watched_twice() {
        let queues: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let watchers = Watchers::default();
        let mut first_four: Vec<String> = (0..4).filter_map(|_| watchers.watch(&queues)).collect();
        first_four.sort();
        assert_eq!(first_four, queues);
        // One watcher of "c" leaves (it got a job): the next to block takes "c" again, whatever
        // the order of preference says.
        watchers.unwatch("c");
        let preference: Vec<String> = ["d", "a", "c", "b"].map(String::from).to_vec();
        assert_eq!(watchers.watch(&preference).as_deref(), Some("c"));
        assert_eq!(
            watchers.watch(&preference).as_deref(),
            Some("d"),
            "a tie goes to the preferred queue"
        );
        assert_eq!(watchers.watch(&[]), None);
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
