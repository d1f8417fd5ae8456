//! `gator-bench workflow N`: the cost of a workflow step against a plain job. Two phases on one
//! worker, each from an empty queue: N plain jobs dispatched one by one (by
//! [`DISPATCHERS`] tasks) while the worker runs them; then N / 3 three-step workflows
//! (`then(a).then(b).then(c)`, so N steps) dispatched the same way. Each phase is timed from
//! its first dispatch to its last job's run; the overhead per step is the difference divided
//! by N. A workflow step pays for its workflow's hash (one script at dispatch), its report
//! (`ack.lua` with an outbox record, `wf_report.lua`) and its child's push (`chain_push.lua`,
//! `wf_pushed.lua`, `LREM`), and the next stage waits for that hand-off. Then 1,000 fan-in
//! workflows, one at a time, time their join's start after its last parent (`fanin`).

use crate::measure::report;
use crate::modes::{Noop, client, reset_counters, start_worker, wait_for_jobs};
use gator_core::Workflow;
use std::time::Instant;
use tokio::task::JoinSet;

/// Fan-in workflows measured after the two phases (see [`crate::fanin`]).
const FAN_IN: usize = 1_000;

/// Tasks dispatching at once, as a web app's handlers would.
const DISPATCHERS: usize = 8;

pub async fn workflow(n: usize) -> anyhow::Result<()> {
    let n = (n / 3).max(1) * 3;
    let worker = start_worker();
    let plain = timed(n, |i| async move {
        Noop::call(i as i64)
            .through(client().await?)
            .dispatch()
            .await?;
        Ok(())
    })
    .await?;
    let workflows = timed(n, |i| async move {
        // One workflow per third index: the other two are its later steps.
        if i % 3 == 0 {
            Workflow::new()
                .then(Noop::call(i as i64))
                .then(Noop::call(i as i64 + 1))
                .then(Noop::call(i as i64 + 2))
                .through(client().await?)
                .dispatch()
                .await?;
        }
        Ok(())
    })
    .await?;
    let (p50, p99, max) = crate::fanin::fan_in(FAN_IN).await?;
    worker.stop().await?;
    report(
        format!(
            r#"{{"phase":"fan-in","workflows":{FAN_IN},"join_wait_p50_ms":{p50:.3},"join_wait_p99_ms":{p99:.3},"join_wait_max_ms":{max:.3}}}"#
        ),
        format!(
            "fan-in: {FAN_IN} workflows of three parts and a join; the join started {p50:.1} ms after its last parent ended (p50), {p99:.1} ms (p99), {max:.1} ms at most"
        ),
    );
    let (plain_rate, wf_rate) = (n as f64 / plain, n as f64 / workflows);
    let overhead_us = (workflows - plain) / n as f64 * 1e6;
    report(
        format!(
            r#"{{"phase":"workflow","n":{n},"plain_secs":{plain:.4},"workflow_secs":{workflows:.4},"plain_rate":{plain_rate:.1},"step_rate":{wf_rate:.1},"overhead_us_per_step":{overhead_us:.1}}}"#
        ),
        format!(
            "workflow: {n} plain jobs in {plain:.3} s ({plain_rate:.0}/s); {} three-step workflows in {workflows:.3} s ({wf_rate:.0} steps/s, {:.2}x plain); {overhead_us:.1} µs more per step",
            n / 3,
            wf_rate / plain_rate
        ),
    );
    Ok(())
}

/// Seconds from the first of `n` dispatches (`dispatch(i)` for each `i`, by
/// [`DISPATCHERS`] tasks) to the run of the `n`th job.
async fn timed<F, Fut>(n: usize, dispatch: F) -> anyhow::Result<f64>
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send,
{
    reset_counters(n);
    let t0 = Instant::now();
    let mut tasks = JoinSet::new();
    for task in 0..DISPATCHERS {
        let dispatch = dispatch.clone();
        tasks.spawn(async move {
            for i in (task..n).step_by(DISPATCHERS) {
                dispatch(i).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let end = wait_for_jobs(n, "workflow").await;
    Ok(end.duration_since(t0).as_secs_f64())
}
