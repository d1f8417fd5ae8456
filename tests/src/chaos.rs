//! What the chaos suites share: a replayable random source, and the check of a chain's run
//! order (`tests/tests/chaos.rs` on one server, `tests/tests/cluster_chaos.rs` on a cluster).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// xorshift64*: enough randomness to pick victims and gaps, and replayable from its seed.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    /// From `CHAOS_SEED`, else from the clock; returns the seed too, to be printed.
    pub fn seeded() -> (Rng, u64) {
        let seed = std::env::var("CHAOS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                now.as_nanos() as u64
            });
        (Rng(seed | 1), seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A duration of `low..=high` milliseconds.
    pub fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(low + self.below(high - low + 1))
    }
}

/// For the step numbers of a chain of `count` steps in the order they ran: every step ran, each
/// first ran after the step before it first ran, and nothing else is there. Returns how many
/// runs were duplicates.
pub fn chain_order(steps: &[u32], count: u32) -> Result<u64, String> {
    if let Some(bad) = steps.iter().find(|s| !(1..=count).contains(s)) {
        return Err(format!("no step {bad} in a chain of {count}: {steps:?}"));
    }
    let mut previous = None;
    for step in 1..=count {
        let Some(first) = steps.iter().position(|s| *s == step) else {
            return Err(format!("step {step} never ran: {steps:?}"));
        };
        if previous.is_some_and(|p| first < p) {
            return Err(format!(
                "step {step} ran before step {}: {steps:?}",
                step - 1
            ));
        }
        previous = Some(first);
    }
    Ok(steps.len() as u64 - u64::from(count))
}

/// The steps of a fan-out workflow, in the order they ran: step 1, then steps 2 to
/// `1 + width` in parallel, then step `2 + width`, the fan-in. Every step ran, every step of
/// the fan-out first ran after step 1 first ran, and the fan-in first ran after every step of
/// the fan-out first ran. Returns how many runs were duplicates.
pub fn fan_in_order(steps: &[u32], width: u32) -> Result<u64, String> {
    let join = width + 2;
    if let Some(bad) = steps.iter().find(|s| !(1..=join).contains(s)) {
        return Err(format!("no step {bad} in a workflow of {join}: {steps:?}"));
    }
    let first = |step: u32| {
        steps
            .iter()
            .position(|s| *s == step)
            .ok_or_else(|| format!("step {step} never ran: {steps:?}"))
    };
    let root = first(1)?;
    let mut last_parent = root;
    for step in 2..join {
        let at = first(step)?;
        if at < root {
            return Err(format!("step {step} ran before step 1: {steps:?}"));
        }
        last_parent = last_parent.max(at);
    }
    if first(join)? < last_parent {
        return Err(format!(
            "the fan-in (step {join}) ran before all its parents: {steps:?}"
        ));
    }
    Ok(steps.len() as u64 - u64::from(join))
}

#[cfg(test)]
mod tests {
    use super::{chain_order, fan_in_order};

    #[test]
    fn fan_in_order_allows_duplicates_but_no_fan_in_before_every_parent() {
        assert_eq!(fan_in_order(&[1, 3, 2, 4, 5], 3), Ok(0));
        assert_eq!(fan_in_order(&[1, 2, 2, 3, 4, 5, 5], 3), Ok(2));
        assert!(
            fan_in_order(&[1, 2, 3, 5, 4], 3).is_err(),
            "fan-in too early"
        );
        assert!(
            fan_in_order(&[2, 1, 3, 4, 5], 3).is_err(),
            "fan-out before its root"
        );
        assert!(
            fan_in_order(&[1, 2, 3, 5], 3).is_err(),
            "a parent never ran"
        );
        assert!(fan_in_order(&[1, 2, 3, 4, 6], 3).is_err());
    }

    #[test]
    fn chain_order_allows_duplicate_runs_but_no_step_before_its_predecessor() {
        assert_eq!(chain_order(&[1, 2, 3], 3), Ok(0));
        assert_eq!(chain_order(&[1, 1, 2, 2, 3], 3), Ok(2));
        assert_eq!(
            chain_order(&[1, 2, 1, 3], 3),
            Ok(1),
            "a rerun of step 1 after step 2 started"
        );
        assert!(chain_order(&[2, 1, 3], 3).is_err());
        assert!(chain_order(&[1, 3, 2], 3).is_err());
        assert!(chain_order(&[1, 2], 3).is_err());
        assert!(chain_order(&[1, 2, 3, 4], 3).is_err());
    }
}
