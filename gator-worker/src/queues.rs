//! The queues a worker serves: which ones, the order to try them in for each fetch (strict,
//! weighted shuffle, or every known queue), and which queue each idle processor watches.

use crate::config::QueueSelection;
use gator_core::Client;
use rand::RngExt;
use rand::seq::SliceRandom;
use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

/// The queues a worker serves and the order to try them in.
#[derive(Debug)]
pub struct QueueOrder {
    selection: QueueSelection,
    /// For [`QueueSelection::AllKnown`]: the known-queues set as last read.
    known: RwLock<Vec<String>>,
}

impl QueueOrder {
    /// The order for `selection`; with `AllKnown` it is empty until [`QueueOrder::refresh`].
    pub fn new(selection: QueueSelection) -> QueueOrder {
        QueueOrder {
            selection,
            known: RwLock::new(Vec::new()),
        }
    }

    /// Re-reads the known-queues set (only used when no `--queues` was given).
    pub async fn refresh(&self, client: &Client) -> gator_core::Result<()> {
        if self.selection == QueueSelection::AllKnown {
            let known = client.known_queues().await?;
            *self.known.write().unwrap_or_else(|e| e.into_inner()) = known;
        }
        Ok(())
    }

    /// Every queue served, in a stable order (the poller promotes due jobs into these).
    pub fn all(&self) -> Vec<String> {
        match &self.selection {
            QueueSelection::Strict(q) => q.clone(),
            QueueSelection::Weighted(q) => q.iter().map(|(name, _)| name.clone()).collect(),
            QueueSelection::AllKnown => {
                self.known.read().unwrap_or_else(|e| e.into_inner()).clone()
            }
        }
    }

    /// The queue a fresh [`QueueOrder::next_order`] would try first, drawn with the same odds
    /// without building the whole order: a queue comes first with probability weight / total
    /// weight (always the first, in strict order; uniformly, among every known queue). With
    /// [`QueueOrder::order_starting_with`], the two give an order of the same odds as
    /// `next_order`.
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
                let known = self.known.read().unwrap_or_else(|e| e.into_inner());
                (!known.is_empty()).then(|| known[rng.random_range(0..known.len())].clone())
            }
        }
    }

    /// The order for one fetch whose first queue was already drawn ([`QueueOrder::draw_first`]):
    /// `first`, then the others as [`QueueOrder::next_order`] would order them.
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
                let mut rest: Vec<String> = self.all().into_iter().filter(|n| n != first).collect();
                rest.shuffle(&mut rng);
                order.extend(rest);
            }
        }
        order
    }

    /// The order to try the queues in for one fetch.
    pub fn next_order(&self) -> Vec<String> {
        let mut rng = rand::rng();
        match &self.selection {
            QueueSelection::Strict(q) => q.clone(),
            QueueSelection::Weighted(q) => weighted_shuffle(q, &mut rng),
            QueueSelection::AllKnown => {
                let mut queues = self.all();
                queues.shuffle(&mut rng);
                queues
            }
        }
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
