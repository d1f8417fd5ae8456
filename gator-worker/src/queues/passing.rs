//! The jobs this worker passes over on a queue it shares with workers that run them: a job it
//! does not run, which the job catalogue says another live worker runs from that queue, is
//! handed back to the head of its queue once, and from then on left where it is: this worker
//! fetches that queue with `fetch_except.lua`, which skips those jobs, and never blocks on it
//! (a blocking fetch would take whatever comes). A worker that runs every job of its queues
//! never has any: it pays one atomic load per fetch.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How many job names a worker passes over on one list, at most: the names go to each fetch
/// as arguments. Past this, a job it does not run is parked for a second, as before.
pub const MAX_PASSED: usize = 64;

/// The job names this worker passes over, per list it fetches from, each with the generation
/// it was added in: a fetch notes the generation before it is sent ([`Passing::generation`]),
/// so a job it brings back can be told apart from one it raced (its name was added after the
/// fetch was sent, and the fetch could not pass over it).
#[derive(Debug, Default)]
pub struct Passing {
    /// Whether any list has names: the plain path reads only this.
    any: AtomicBool,
    /// Counts the names added; each name keeps the count it was added at.
    generation: AtomicU64,
    by_list: RwLock<HashMap<String, Vec<(String, u64)>>>,
}

impl Passing {
    /// The names passed over on `list`, if any.
    pub fn names(&self, list: &str) -> Option<Vec<String>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let by_list = self.by_list.read().unwrap_or_else(|e| e.into_inner());
        let names = by_list.get(list)?;
        Some(names.iter().map(|(name, _)| name.clone()).collect())
    }

    /// How many names were added so far: a fetch reads it before it is sent.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Whether job `name` on `list` was passed over already when a fetch that read
    /// generation `seen` was sent: that fetch should not have brought it (a job pushed by
    /// other means, or read otherwise by the script), where a fetch sent before the name was
    /// added simply raced the hand-back.
    pub fn passed_before(&self, list: &str, name: &str, seen: u64) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let by_list = self.by_list.read().unwrap_or_else(|e| e.into_inner());
        by_list
            .get(list)
            .and_then(|names| names.iter().find(|(n, _)| n == name))
            .is_some_and(|(_, added)| *added <= seen)
    }

    /// Whether this worker passes over some jobs of `list`.
    pub fn passes(&self, list: &str) -> bool {
        self.any.load(Ordering::Acquire)
            && (self.by_list.read().unwrap_or_else(|e| e.into_inner())).contains_key(list)
    }

    /// Whether this worker passes over job `name` on `list`.
    pub fn passes_job(&self, list: &str, name: &str) -> bool {
        self.names(list)
            .is_some_and(|names| names.iter().any(|n| n == name))
    }

    /// Passes over job `name` on `list` from now on; false if the list has
    /// [`MAX_PASSED`] names already.
    pub fn add(&self, list: &str, name: &str) -> bool {
        let mut by_list = self.by_list.write().unwrap_or_else(|e| e.into_inner());
        let names = by_list.entry(list.to_owned()).or_default();
        if !names.iter().any(|(n, _)| n == name) {
            if names.len() >= MAX_PASSED {
                return false;
            }
            let added = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
            names.push((name.to_owned(), added));
        }
        self.any.store(true, Ordering::Release);
        true
    }

    /// Stops passing over job `name` on `list` (no live worker runs it there any more: this
    /// worker takes it again, and fails it as a job whose code is missing).
    pub fn remove(&self, list: &str, name: &str) {
        let mut by_list = self.by_list.write().unwrap_or_else(|e| e.into_inner());
        if let Some(names) = by_list.get_mut(list) {
            names.retain(|(n, _)| n != name);
            if names.is_empty() {
                by_list.remove(list);
            }
        }
        self.any.store(!by_list.is_empty(), Ordering::Release);
    }

    /// Every (list, name) passed over.
    pub fn all(&self) -> Vec<(String, String)> {
        let by_list = self.by_list.read().unwrap_or_else(|e| e.into_inner());
        let pairs = by_list.iter().flat_map(|(list, names)| {
            names
                .iter()
                .map(move |(name, _)| (list.clone(), name.clone()))
        });
        pairs.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_passes_over_the_names_added_until_they_are_removed() {
        let passing = Passing::default();
        assert_eq!(passing.names("shared"), None);
        assert!(passing.add("shared", "left_job"));
        assert!(
            passing.add("shared", "left_job"),
            "adding twice is no change"
        );
        assert!(passing.passes("shared") && !passing.passes("other"));
        assert!(passing.passes_job("shared", "left_job"));
        assert_eq!(passing.names("shared"), Some(vec!["left_job".to_owned()]));
        passing.remove("shared", "left_job");
        assert!(!passing.passes("shared"));
        assert!(passing.all().is_empty());
    }

    #[test]
    fn a_name_counts_as_passed_only_for_fetches_sent_after_it_was_added() {
        let passing = Passing::default();
        let before = passing.generation();
        assert!(passing.add("shared", "left_job"));
        let after = passing.generation();
        assert!(
            !passing.passed_before("shared", "left_job", before),
            "raced"
        );
        assert!(passing.passed_before("shared", "left_job", after));
        assert!(!passing.passed_before("other", "left_job", after));
        assert!(passing.add("shared", "left_job"));
        assert_eq!(passing.generation(), after, "adding twice is no change");
    }

    #[test]
    fn a_list_passes_over_a_bounded_number_of_names() {
        let passing = Passing::default();
        for n in 0..MAX_PASSED {
            assert!(passing.add("shared", &format!("job{n}")));
        }
        assert!(!passing.add("shared", "one_more"));
        assert_eq!(passing.all().len(), MAX_PASSED);
    }
}
