//! What the chaos suites share: a replayable random source, the check of a chain's run
//! order, and the count of durable jobs' repeated steps and items (`tests/tests/chaos.rs` on
//! one server, `tests/tests/cluster_chaos.rs` on a cluster).

use std::collections::{HashMap, HashSet};
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

/// Runs repeated, by cause.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ByCause {
    /// Of an attempt that a killed process ran.
    pub killed: u64,
    /// Of an attempt the suite's outage explains: a worker cut off past its lease, a master
    /// failed over with the job in flight on it.
    pub outage: u64,
    /// Anything else: Gator's fault.
    pub other: u64,
}

/// The chaos durable jobs' steps and items that ran more than once in one attempt (a later
/// attempt, after a save that failed in an outage, is the job's own retry, not a repeat).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DurableRepeats {
    /// Durable jobs seen.
    pub jobs: u64,
    /// Steps run again.
    pub steps: ByCause,
    /// Items of an iteration run again.
    pub items: ByCause,
    /// Attempts that repeated more than their kills and lapses allow: a step more than once,
    /// or items more than one checkpoint interval, a kill or lapse.
    pub over_bound: Vec<String>,
    /// Up to 20 attempts with repeats [`ByCause::other`], to look into.
    pub unexplained: Vec<String>,
}

/// Counts the repeats in a chaos durable job's effects (`<id>:<what>:<attempt>` → runs, where
/// `what` is a step's name or `item<n>`), each attempt's processes known from `by_pid`
/// (`<id>:<attempt>:<pid>`): an attempt a killed process ran is [`ByCause::killed`]; else
/// `outage(id, attempt)` says whether the suite's outage (a lapse: a process cut off past its
/// lease, a master failed over) explains it. Either way, at most one step and `every` items
/// repeat per killed process, plus as many for a lapse.
pub fn durable_repeats(
    effects: &HashMap<String, u64>,
    by_pid: &HashMap<String, u64>,
    killed_pids: &HashSet<u32>,
    outage: impl Fn(u64, u32) -> bool,
    every: u64,
) -> DurableRepeats {
    let mut kills: HashMap<(u64, u32), u64> = HashMap::new();
    // (id, attempt) → its processes and their effects, to show when a bound is passed.
    let mut ran_in: HashMap<(u64, u32), Vec<String>> = HashMap::new();
    for (key, n) in by_pid {
        let mut parts = key.split(':').map(str::parse::<u64>);
        if let (Some(Ok(id)), Some(Ok(attempt)), Some(Ok(pid))) =
            (parts.next(), parts.next(), parts.next())
        {
            let killed = u32::try_from(pid).is_ok_and(|pid| killed_pids.contains(&pid));
            *kills.entry((id, attempt as u32)).or_default() += u64::from(killed);
            let mark = if killed { " killed" } else { "" };
            ran_in
                .entry((id, attempt as u32))
                .or_default()
                .push(format!("pid {pid}: {n} effects{mark}"));
        }
    }
    // (id, attempt) → (steps repeated, items repeated)
    let mut extra: HashMap<(u64, u32), (u64, u64)> = HashMap::new();
    let mut jobs = HashSet::new();
    for (key, n) in effects {
        let mut parts = key.split(':');
        let (Some(Ok(id)), Some(what), Some(Ok(attempt))) = (
            parts.next().map(str::parse::<u64>),
            parts.next(),
            parts.next().map(str::parse::<u32>),
        ) else {
            continue;
        };
        jobs.insert(id);
        let entry = extra.entry((id, attempt)).or_default();
        if what.starts_with("item") {
            entry.1 += n - 1;
        } else {
            entry.0 += n - 1;
        }
    }
    let mut repeats = DurableRepeats {
        jobs: jobs.len() as u64,
        ..DurableRepeats::default()
    };
    for ((id, attempt), (steps, items)) in extra.into_iter().filter(|(_, e)| e.0 + e.1 > 0) {
        let killed = kills.get(&(id, attempt)).copied().unwrap_or(0);
        let lapsed = outage(id, attempt);
        // Each kill or lapse loses at most what ran since the last save: a step, and `every`
        // items. An attempt may meet both (cut off, then run again where a kill hits it).
        let allowed = killed + u64::from(lapsed);
        if allowed > 0 && (steps > allowed || items > allowed * every) {
            let ran_in = ran_in.remove(&(id, attempt)).unwrap_or_default().join(", ");
            repeats.over_bound.push(format!(
                "job {id} attempt {attempt}: {steps} steps and {items} items repeated after \
                 {killed} kills and {} lapses ({ran_in})",
                u64::from(lapsed)
            ));
        }
        let (by_steps, by_items) = if killed > 0 {
            (&mut repeats.steps.killed, &mut repeats.items.killed)
        } else if lapsed {
            (&mut repeats.steps.outage, &mut repeats.items.outage)
        } else {
            if repeats.unexplained.len() < 20 {
                repeats.unexplained.push(format!(
                    "job {id} attempt {attempt}: {steps} steps and {items} items repeated"
                ));
            }
            (&mut repeats.steps.other, &mut repeats.items.other)
        };
        *by_steps += steps;
        *by_items += items;
    }
    repeats
}

#[cfg(test)]
mod tests {
    use super::{ByCause, chain_order, durable_repeats, fan_in_order};
    use std::collections::{HashMap, HashSet};

    fn map(pairs: &[(&str, u64)]) -> HashMap<String, u64> {
        pairs.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
    }

    #[test]
    fn durable_repeats_are_counted_by_attempt_and_cause_within_an_interval_a_kill_or_lapse() {
        let effects = map(&[
            // Job 1, attempt 1: killed once, step one and two items again.
            ("1:one:1", 2),
            ("1:item0:1", 2),
            ("1:item1:1", 2),
            ("1:item2:1", 1),
            // Job 2: a failed save, then its retry: a later attempt is no repeat.
            ("2:one:1", 1),
            ("2:item0:1", 1),
            ("2:item0:2", 1),
            // Job 3: repeated in a process nobody killed, outside any outage.
            ("3:two:1", 2),
            // Job 4: repeated in the outage.
            ("4:item5:1", 3),
            // Job 5: killed once, five items again with a checkpoint every three.
            ("5:item0:1", 2),
            ("5:item1:1", 2),
            ("5:item2:1", 2),
            ("5:item3:1", 2),
            ("5:item4:1", 2),
            // Job 6: cut off after item 8 (its save of 9 lost), run again from 6 where a kill
            // hit it after item 7, then from 6 again: a lapse and a kill, five items again.
            ("6:item6:1", 3),
            ("6:item7:1", 3),
            ("6:item8:1", 2),
            // Job 7: a lapse alone, four items again.
            ("7:item0:1", 2),
            ("7:item1:1", 2),
            ("7:item2:1", 2),
            ("7:item3:1", 2),
        ]);
        let by_pid = map(&[
            ("1:1:100", 1),
            ("1:1:200", 1),
            ("2:1:200", 1),
            ("2:2:200", 1),
            ("3:1:200", 1),
            ("4:1:300", 1),
            ("5:1:100", 1),
            ("5:1:200", 1),
            ("6:1:300", 9),
            ("6:1:100", 2),
            ("6:1:200", 5),
            ("7:1:300", 8),
            ("7:1:200", 4),
        ]);
        let killed = HashSet::from([100]);
        let lapsed = |id, _| [4, 6, 7].contains(&id);
        let mut repeats = durable_repeats(&effects, &by_pid, &killed, lapsed, 3);
        assert_eq!(repeats.jobs, 7);
        let steps = ByCause {
            killed: 1,
            outage: 0,
            other: 1,
        };
        let items = ByCause {
            killed: 12,
            outage: 6,
            other: 0,
        };
        assert_eq!((repeats.steps, repeats.items), (steps, items));
        repeats.over_bound.sort();
        assert_eq!(repeats.over_bound.len(), 2, "{:?}", repeats.over_bound);
        assert_eq!(
            repeats.unexplained,
            ["job 3 attempt 1: 1 steps and 0 items repeated"]
        );
        assert!(repeats.over_bound[0].starts_with("job 5 "));
        assert!(repeats.over_bound[1].starts_with("job 7 "));
    }

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
