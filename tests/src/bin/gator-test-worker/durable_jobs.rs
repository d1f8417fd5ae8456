//! The worker binary's durable jobs, for the kill tests (`tests/tests/durable_crashes.rs`) and
//! the chaos suites. Every side effect is counted in Redis (`HINCRBY`, keyed by job id and
//! step, row or item), so a test counts what ran twice after a kill.
//!
//! A kill test stops a job at a named point: the job counts the point reached in
//! `durable:reached <id>:<point>`, and the first time it reaches a point listed in its `holds`
//! it sleeps `hold_ms` there, long enough for the test to SIGKILL its process (or to cut its
//! connections first, so that the write after the point is sent and its reply lost).

use gator_core::context::durable::{Iteration, Next};
use gator_core::{Context, JobError, job};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `HINCRBY <hash> <field> 1` on the worker's own connection; the count after it.
async fn count(hash: &str, field: &str) -> Result<u64, JobError> {
    let client = gator_core::default_client()
        .await
        .map_err(|e| JobError::new(e.to_string()))?;
    redis::cmd("HINCRBY")
        .arg(hash)
        .arg(field)
        .arg(1)
        .query_async(&mut client.connection())
        .await
        .map_err(|e| JobError::new(e.to_string()))
}

/// A side effect: counts `what` of job `id` in `durable:effects`; the count after it.
async fn effect(id: u64, what: &str) -> Result<u64, JobError> {
    count("durable:effects", &format!("{id}:{what}")).await
}

/// Counts `point` reached in `durable:reached`, and the first time, if `holds` lists it,
/// sleeps `hold_ms` there.
async fn reach(id: u64, point: &str, holds: &[String], hold_ms: u64) -> Result<(), JobError> {
    let times = count("durable:reached", &format!("{id}:{point}")).await?;
    if times == 1 && holds.iter().any(|h| h == point) {
        tokio::time::sleep(Duration::from_millis(hold_ms)).await;
    }
    Ok(())
}

/// Three steps, `a`, `b` and `c`, each a side effect whose count is its result. Points:
/// `before:<step>` (the steps before it saved) and `in:<step>` (its side effect done, its
/// result not yet written). Returns the results it got (`a=1 b=2 c=1`), also kept in
/// `durable:results <id>`.
#[job(queue = "durable", backoff = ["200ms"])]
async fn durable_steps(
    ctx: Context,
    id: u64,
    holds: Vec<String>,
    hold_ms: u64,
) -> Result<String, JobError> {
    let mut results = Vec::new();
    for name in ["a", "b", "c"] {
        reach(id, &format!("before:{name}"), &holds, hold_ms).await?;
        let got: u64 = ctx
            .step(name, || async {
                let n = effect(id, name).await?;
                reach(id, &format!("in:{name}"), &holds, hold_ms).await?;
                Ok::<_, JobError>(n)
            })
            .await?;
        results.push(format!("{name}={got}"));
    }
    let results = results.join(" ");
    let client = gator_core::default_client()
        .await
        .map_err(|e| JobError::new(e.to_string()))?;
    redis::cmd("HSET")
        .arg("durable:results")
        .arg(id)
        .arg(&results)
        .query_async::<()>(&mut client.connection())
        .await
        .map_err(|e| JobError::new(e.to_string()))?;
    Ok(results)
}

/// Works through `rows` rows from its checkpoint, each a side effect (`row<n>`), saving the
/// next row after each. Points: `save:<n>` (row n − 1 done, checkpoint n about to be sent)
/// and `saved:<n>` (checkpoint n written).
#[job(queue = "durable", backoff = ["200ms"])]
async fn durable_rows(
    ctx: Context,
    id: u64,
    rows: u32,
    holds: Vec<String>,
    hold_ms: u64,
) -> Result<u32, JobError> {
    let mut row: u32 = ctx.resume().unwrap_or(0);
    while row < rows {
        effect(id, &format!("row{row}")).await?;
        row += 1;
        reach(id, &format!("save:{row}"), &holds, hold_ms).await?;
        ctx.checkpoint(&row).await?;
        reach(id, &format!("saved:{row}"), &holds, hold_ms).await?;
    }
    Ok(row)
}

/// A step `before`, a sleep of `millis`, a step `after`. Points: `pre-sleep` (`before` saved,
/// the sleep next: nothing else is sent before the run ends and its suspension is written)
/// and `woke` (the sleep slept, the job promoted and fetched again). Each call of the sleep
/// counts `sleep-call`.
#[job(queue = "durable", backoff = ["200ms"])]
async fn durable_nap(
    ctx: Context,
    id: u64,
    millis: u64,
    holds: Vec<String>,
    hold_ms: u64,
) -> Result<(), JobError> {
    ctx.step("before", || effect(id, "before")).await?;
    effect(id, "sleep-call").await?;
    reach(id, "pre-sleep", &holds, hold_ms).await?;
    ctx.sleep(Duration::from_millis(millis)).await?;
    reach(id, "woke", &holds, hold_ms).await?;
    ctx.step("after", || effect(id, "after")).await?;
    Ok(())
}

/// Iterates over `items` items, each counted in `durable:items:<id>` under its number, its
/// cursor saved every `every` items (and every second).
#[job(queue = "durable", backoff = ["200ms"])]
async fn durable_walk(ctx: Context, id: u64, items: u64, every: u64) -> Result<(), JobError> {
    let client = gator_core::default_client()
        .await
        .map_err(|e| JobError::new(e.to_string()))?;
    let key = format!("durable:items:{id}");
    let plan = Iteration::default().checkpoint_every_items(every);
    ctx.iterate_with(plan, 0u64, |item| {
        let (mut conn, key) = (client.connection(), key.clone());
        async move {
            if item >= items {
                return Ok::<_, JobError>(Next::Done);
            }
            redis::cmd("HINCRBY")
                .arg(&key)
                .arg(item)
                .arg(1)
                .query_async::<()>(&mut conn)
                .await
                .map_err(|e| JobError::new(e.to_string()))?;
            Ok(Next::Continue(item + 1))
        }
    })
    .await
}

/// Iterates over `items` items (each a side effect, `item<n>`), its cursor saved every
/// `every` items, then sleeps `millis`, then runs a step `after`.
#[job(queue = "durable", backoff = ["200ms"])]
async fn durable_walk_then_nap(
    ctx: Context,
    id: u64,
    items: u64,
    every: u64,
    millis: u64,
) -> Result<(), JobError> {
    let plan = Iteration::default().checkpoint_every_items(every);
    ctx.iterate_with(plan, 0u64, |item| async move {
        if item >= items {
            return Ok::<_, JobError>(Next::Done);
        }
        effect(id, &format!("item{item}")).await?;
        Ok(Next::Continue(item + 1))
    })
    .await?;
    ctx.sleep(Duration::from_millis(millis)).await?;
    ctx.step("after", || effect(id, "after")).await?;
    Ok(())
}

// The chaos suites' durable job: a step, an iteration, a short sleep, a step. Each side effect
// is counted under `<id>:<what>:<attempt>` in `<prefix>durable` and under
// `<id>:<attempt>:<pid>` in `<prefix>durable_by_pid`: a step or item run twice in one attempt
// is Gator's repeat (a later attempt after a failed save is the job's own retry), and the pid
// says whether its process was killed or cut off. Its run, once done, is counted like a plain
// chaos job's.

/// Items of a chaos durable job's iteration, and how often it saves its cursor: a kill repeats
/// at most this many.
const CHAOS_ITEMS: u64 = 10;
const CHAOS_EVERY: u64 = 3;

/// Chaos suite: a durable job (see above), on `chaos-default` (or another queue of the suite).
#[job(queue = "chaos-default", backoff = ["200ms"])]
async fn chaos_durable(ctx: Context, id: u64) -> Result<(), String> {
    durable_chaos_run(&ctx, "chaos:", id).await
}

/// Cluster chaos: [`chaos_durable`] with its keys under `{cchaos}`.
#[job(queue = "cc-0", backoff = ["200ms"])]
async fn cc_durable(ctx: Context, id: u64) -> Result<(), String> {
    durable_chaos_run(&ctx, "{cchaos}:", id).await
}

async fn durable_chaos_run(ctx: &Context, prefix: &str, id: u64) -> Result<(), String> {
    let effect = |what: String| chaos_effect(prefix, id, what, ctx.attempt());
    ctx.step("one", || effect("one".into()))
        .await
        .map_err(|e| e.to_string())?;
    let plan = Iteration::default().checkpoint_every_items(CHAOS_EVERY);
    ctx.iterate_with(plan, 0u64, |item| async move {
        if item >= CHAOS_ITEMS {
            return Ok::<_, String>(Next::Done);
        }
        effect(format!("item{item}")).await?;
        nap(id).await;
        Ok(Next::Continue(item + 1))
    })
    .await
    .map_err(|e| e.to_string())?;
    let nap_ms = 100 + id % 400;
    ctx.sleep(Duration::from_millis(nap_ms))
        .await
        .map_err(|e| e.to_string())?;
    ctx.step("two", || effect("two".into()))
        .await
        .map_err(|e| e.to_string())?;
    let runs = format!("{prefix}runs");
    super::record_in(&runs, id, ctx.attempt()).await
}

/// Counts a chaos durable job's side effect `what` (see above).
async fn chaos_effect(prefix: &str, id: u64, what: String, attempt: u32) -> Result<(), String> {
    let client = gator_core::default_client()
        .await
        .map_err(|e| e.to_string())?;
    redis::pipe()
        .atomic()
        .hincr(
            format!("{prefix}durable"),
            format!("{id}:{what}:{attempt}"),
            1,
        )
        .ignore()
        .hincr(
            format!("{prefix}durable_by_pid"),
            format!("{id}:{attempt}:{}", std::process::id()),
            1,
        )
        .ignore()
        .query_async::<()>(&mut client.connection())
        .await
        .map_err(|e| e.to_string())
}

/// Sleeps 0–9 ms, so a kill lands between items.
async fn nap(id: u64) {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    let mix = (id ^ nanos).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    tokio::time::sleep(Duration::from_millis(mix % 10)).await;
}
