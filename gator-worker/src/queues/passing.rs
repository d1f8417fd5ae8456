//! The jobs this worker passes over on a queue it shares with workers that run them: a job it
//! does not run, which the job catalogue says another live worker runs from that queue, is
//! handed back to the head of its queue once, and from then on left where it is: this worker
//! fetches that queue with `fetch_except.lua`, which skips those jobs, and never blocks on it
//! (a blocking fetch would take whatever comes). A worker that runs every job of its queues
//! never has any: it pays one atomic load per fetch.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many job names a worker passes over on one list, at most: the names go to each fetch
/// as arguments. Past this, a job it does not run is parked for a second, as before.
pub const MAX_PASSED: usize = 64;

/// The job names this worker passes over, per list it fetches from.
#[derive(Debug, Default)]
pub struct Passing {
    /// Whether any list has names: the plain path reads only this.
    any: AtomicBool,
    by_list: RwLock<HashMap<String, Vec<String>>>,
}

impl Passing {
    /// The names passed over on `list`, if any.
    pub fn names(&self, list: &str) -> Option<Vec<String>> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.by_list
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(list)
            .cloned()
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
        if !names.iter().any(|n| n == name) {
            if names.len() >= MAX_PASSED {
                return false;
            }
            names.push(name.to_owned());
        }
        self.any.store(true, Ordering::Release);
        true
    }

    /// Stops passing over job `name` on `list` (no live worker runs it there any more: this
    /// worker takes it again, and fails it as a job whose code is missing).
    pub fn remove(&self, list: &str, name: &str) {
        let mut by_list = self.by_list.write().unwrap_or_else(|e| e.into_inner());
        if let Some(names) = by_list.get_mut(list) {
            names.retain(|n| n != name);
            if names.is_empty() {
                by_list.remove(list);
            }
        }
        self.any.store(!by_list.is_empty(), Ordering::Release);
    }

    /// Every (list, name) passed over.
    pub fn all(&self) -> Vec<(String, String)> {
        let by_list = self.by_list.read().unwrap_or_else(|e| e.into_inner());
        let pairs = by_list
            .iter()
            .flat_map(|(list, names)| names.iter().map(move |name| (list.clone(), name.clone())));
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
    fn a_list_passes_over_a_bounded_number_of_names() {
        let passing = Passing::default();
        for n in 0..MAX_PASSED {
            assert!(passing.add("shared", &format!("job{n}")));
        }
        assert!(!passing.add("shared", "one_more"));
        assert_eq!(passing.all().len(), MAX_PASSED);
    }
}
