//! The fan-in phase of `gator-bench workflow`: how soon a join step starts after its last
//! parent ends. Workflows of three parallel parts and a join (`then_all([a, b, c]).then(d)`),
//! dispatched [`SPACING`] apart to a worker at `GATOR_BENCH_CONCURRENCY`; the figure is the
//! join's start minus the end of the body of the last of its parents to end.

use crate::measure::percentile_ms;
use crate::modes::{client, job_done, reset_counters, wait_for_jobs};
use gator_core::{Step, Workflow, job};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Between two workflows' dispatches.
const SPACING: Duration = Duration::from_millis(2);

/// When the last part of each workflow ended, by workflow.
static LAST_END: Mutex<Option<HashMap<i64, Instant>>> = Mutex::new(None);
/// How long each join waited after its last parent, µs.
static WAIT_US: Mutex<Vec<i64>> = Mutex::new(Vec::new());

/// A parallel part of workflow `w`.
#[job(queue = "bench")]
async fn part(w: i64, _part: i64) {
    let mut ends = LAST_END.lock().unwrap_or_else(|e| e.into_inner());
    let end = ends
        .get_or_insert_with(HashMap::new)
        .entry(w)
        .or_insert_with(Instant::now);
    *end = (*end).max(Instant::now());
}

/// The join of workflow `w`.
#[job(queue = "bench")]
async fn join(w: i64) {
    let now = Instant::now();
    let last = LAST_END
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|ends| ends.get(&w).copied());
    if let Some(last) = last {
        let wait = now.saturating_duration_since(last).as_micros() as i64;
        WAIT_US.lock().unwrap_or_else(|e| e.into_inner()).push(wait);
    }
    job_done();
}

/// Runs `n` fan-in workflows on the running worker; returns the join's wait after its last
/// parent, p50, p99 and max, in ms.
pub async fn fan_in(n: usize) -> anyhow::Result<(f64, f64, f64)> {
    let client = client().await?;
    reset_counters(n);
    for w in 0..n as i64 {
        Workflow::new()
            .then_all((0..3).map(|p| Step::new(Part::call(w, p))))
            .then(Join::call(w))
            .through(client)
            .dispatch()
            .await?;
        tokio::time::sleep(SPACING).await;
    }
    wait_for_jobs(n, "fan-in").await;
    let mut waits = WAIT_US.lock().unwrap_or_else(|e| e.into_inner()).clone();
    waits.sort_unstable();
    Ok((
        percentile_ms(&waits, 50.0),
        percentile_ms(&waits, 99.0),
        percentile_ms(&waits, 100.0),
    ))
}
