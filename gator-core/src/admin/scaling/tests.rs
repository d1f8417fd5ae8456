//! The unit tests of the suggestion (`suggest`) and the policy's bounds.

use super::*;

fn demand(backlog: u64, busy: u64, workers: u64, capacity: u64, throughput: f64) -> Demand {
    Demand {
        backlog,
        busy,
        workers,
        capacity,
        throughput,
    }
}

#[test]
fn nothing_waiting_or_running_needs_no_worker() {
    let policy = ScalingPolicy::default();
    assert_eq!(suggest(demand(0, 0, 3, 30, 5.0), policy), (0, Basis::Idle));
}

#[test]
fn without_history_each_waiting_job_gets_a_slot() {
    let policy = ScalingPolicy::default();
    assert_eq!(
        suggest(demand(25, 0, 0, 0, 0.0), policy),
        (3, Basis::Fallback)
    );
    assert_eq!(
        suggest(demand(25, 0, 1, 5, 0.0), policy),
        (5, Basis::Fallback)
    );
    assert_eq!(
        suggest(demand(1, 0, 0, 0, 0.0), policy),
        (1, Basis::Fallback)
    );
}

#[test]
fn throughput_sizes_the_fleet_to_drain_the_backlog_within_the_target() {
    let policy = ScalingPolicy::new(Duration::from_secs(10), 100).unwrap();
    // 10 slots busy finishing 10 jobs/s: 1 job/s a slot; 200 waiting within 10 s needs
    // 20 more slots: 30 slots, 3 workers of 10.
    assert_eq!(
        suggest(demand(200, 10, 1, 10, 10.0), policy),
        (3, Basis::Throughput)
    );
    // Keeping up with no backlog: the slots in use now, never fewer than one worker.
    assert_eq!(
        suggest(demand(0, 2, 4, 40, 2.0), policy),
        (1, Basis::Throughput)
    );
}

#[test]
fn the_suggestion_is_bounded_and_bad_policies_are_refused() {
    let policy = ScalingPolicy::new(Duration::from_secs(30), 4).unwrap();
    assert_eq!(suggest(demand(1_000_000, 0, 0, 0, 0.0), policy).0, 4);
    assert!(ScalingPolicy::new(Duration::from_millis(10), 4).is_err());
    assert!(ScalingPolicy::new(Duration::from_secs(30), 0).is_err());
    assert!(ScalingPolicy::new(Duration::from_secs(30), MAX_MAX_WORKERS + 1).is_err());
}
