//! A worker binary for the tests that need a real process (signals, kills), with their jobs.

mod durable_jobs;

use gator_core::job;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Sets `test:started` to "s1", sleeps `millis`, then sets `test:finished` to "s1".
#[job]
async fn mark_after(millis: u64) -> gator_core::Result<()> {
    let client = gator_core::default_client().await?;
    let mut conn = client.connection();
    redis::cmd("SET")
        .arg("test:started")
        .arg("s1")
        .query_async::<()>(&mut conn)
        .await?;
    tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
    redis::cmd("SET")
        .arg("test:finished")
        .arg("s1")
        .query_async::<()>(&mut conn)
        .await?;
    Ok(())
}

/// Counts its run in the hash `test:runs` under `id`, so tests can spot lost or doubled jobs.
#[job]
async fn count_run(id: u64) -> gator_core::Result<()> {
    record_run(id).await
}

/// `HINCRBY test:runs <id> 1` through the worker's default client.
async fn record_run(id: u64) -> gator_core::Result<()> {
    let client = gator_core::default_client().await?;
    redis::cmd("HINCRBY")
        .arg("test:runs")
        .arg(id)
        .arg(1)
        .query_async::<()>(&mut client.connection())
        .await?;
    Ok(())
}

/// Periodic-job probe (tests/tests/cron.rs): counts a run in the hash `test:cron:<tag>` under
/// the job's `created_at`, which for a job enqueued by a periodic entry is its tick; so a tick
/// enqueued twice shows a count of 2.
#[job(queue = "cron")]
async fn cron_tick(ctx: gator_core::Context, tag: String) -> gator_core::Result<()> {
    let tick = ctx
        .created_at()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let client = gator_core::default_client().await?;
    redis::cmd("HINCRBY")
        .arg(format!("test:cron:{tag}"))
        .arg(tick)
        .arg(1)
        .query_async::<()>(&mut client.connection())
        .await?;
    Ok(())
}

/// Records when it started, on Redis's clock (ms), in the hash `test:started_at` under `id`.
#[job]
async fn note_time(id: u64) -> Result<(), String> {
    let mut conn = chaos_connection().await?;
    let (secs, micros): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    redis::cmd("HSET")
        .arg("test:started_at")
        .arg(id)
        .arg(secs * 1000 + micros / 1000)
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())
}

/// Expiring jobs' tests: [`note_time`] with `expires_in = "1s"` and `on_expire = "drop"` in
/// its `#[job]`, which the job catalogue carries to dispatches by name (HTTP, CLI).
#[job(expires_in = "1s", on_expire = "drop")]
async fn note_time_expiring(id: u64) -> Result<(), String> {
    note_time(id).await
}

/// Expiring jobs' tests: records, as it starts, in `test:judged` under `id`, its start as its
/// worker judged it on Redis's clock (`ctx.started_at()`, ms, or `-`), then its own status
/// record as it reads it: `<started_at> <state> <since ms or ->`.
#[job]
async fn note_start(ctx: gator_core::Context, id: u64) -> Result<(), String> {
    let ms = |t: SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .to_string()
    };
    let client = gator_core::default_client()
        .await
        .map_err(|e| e.to_string())?;
    let status = client.status(ctx.jid()).await.map_err(|e| e.to_string())?;
    let since = match &status {
        gator_core::JobStatus::Running { since, .. } => ms(*since),
        _ => "-".to_owned(),
    };
    let started = ctx.started_at().map_or_else(|| "-".to_owned(), ms);
    let line = format!("{started} {} {since}", status.name());
    redis::cmd("HSET")
        .arg("test:judged")
        .arg(id)
        .arg(line)
        .query_async::<()>(&mut client.connection())
        .await
        .map_err(|e| e.to_string())
}

/// Fair-key tests: keyed by its `tenant` argument (`fair_key = tenant`), which the catalogue
/// publishes; a dispatch by name may give its own fair key instead. Does nothing.
#[job(fair_key = tenant)]
async fn fair_note(tenant: String, id: u64) {
    let _ = (tenant, id);
}

/// Always fails for good: straight to the dead set.
#[job]
async fn discard_me(id: u64) -> Result<(), gator_core::JobError> {
    Err(gator_core::JobError::discard(format!(
        "job {id} is discarded on purpose"
    )))
}

/// Counts its run in `test:runs` under `id`, then fails; retries 2 s later (the expiring jobs'
/// test: a retry due past the job's deadline never runs).
#[job(backoff = ["2s"])]
async fn fail_then_wait(id: u64) -> Result<(), String> {
    record_run(id).await.map_err(|e| e.to_string())?;
    Err(format!("job {id} fails on purpose"))
}

/// Always fails, and waits a minute before each retry.
#[job(backoff = ["60s"])]
async fn fail_slowly(id: u64) -> Result<(), String> {
    Err(format!("job {id} fails on purpose"))
}

/// Counts a run of `id` in `test:runs` when it starts, then sleeps `millis`.
#[job]
async fn sleepy(id: u64, millis: u64) -> gator_core::Result<()> {
    record_run(id).await?;
    tokio::time::sleep(Duration::from_millis(millis)).await;
    Ok(())
}

/// Progress suite: reports its progress `reports` times over about a second (a pause of 10 ms
/// every 10 reports), the last `1` with the note `<reports> of <reports>`, then runs until the
/// key `progress:release` exists.
#[job(queue = "progress")]
async fn report_progress(ctx: gator_core::Context, reports: u32) -> Result<(), String> {
    for n in 1..=reports {
        let note = format!("{n} of {reports}");
        (ctx.progress(f64::from(n) / f64::from(reports), note).await).map_err(|e| e.to_string())?;
        if n % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let mut conn = chaos_connection().await?;
    loop {
        let released: bool = redis::cmd("EXISTS")
            .arg("progress:release")
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        if released {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Progress suite: reports its progress `reports` times in a few milliseconds (a 1 ms pause
/// every 100, so its flusher writes an early one), and returns at once: its last report is
/// written by the worker's final write, not by a period's flush 250 ms later.
#[job(queue = "progress")]
async fn report_and_return(ctx: gator_core::Context, reports: u32) -> Result<(), String> {
    for n in 1..=reports {
        let note = format!("{n} of {reports}");
        (ctx.progress(f64::from(n) / f64::from(reports), note).await).map_err(|e| e.to_string())?;
        if n % 100 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    Ok(())
}

/// Position suite: sleeps `millis`.
#[job(queue = "pos")]
async fn pos_nap(_id: u64, millis: u64) {
    tokio::time::sleep(Duration::from_millis(millis)).await;
}

/// A number whose `Deserialize` panics on 13 (for the chaos suite's poison payload).
struct Unlucky;

impl<'de> serde::Deserialize<'de> for Unlucky {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Unlucky, D::Error> {
        let n = <u32 as serde::Deserialize>::deserialize(d)?;
        assert_ne!(n, 13, "13 is unlucky");
        Ok(Unlucky)
    }
}

impl serde::Serialize for Unlucky {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(7)
    }
}

/// Chaos suite: a job whose argument's decoder panics on 13.
#[job(queue = "chaos-default")]
async fn poison_unlucky(_n: Unlucky) {}

// The chaos suite's jobs (`tests/tests/chaos.rs`). Each records its runs in Redis, so the
// test can tell a lost job (no run) from a duplicate (two runs). A failed Redis write during
// an outage is an `Err`: the job is retried, and records its run on a later attempt. The
// short backoff keeps those retries (and the flaky jobs' planned one) inside the test's time.

/// Chaos suite: counts a run of job `id` in the hash `chaos:runs`, between two short random
/// sleeps, so that a killed worker dies holding jobs both before and after they recorded.
#[job(queue = "chaos-default", backoff = ["200ms"])]
async fn chaos_plain(ctx: gator_core::Context, id: u64) -> Result<(), String> {
    napped_run(id, chaos_record(id, ctx.attempt())).await
}

/// Chaos suite: fails its first attempt on purpose (counted in `chaos:attempts`), then on
/// later attempts counts its run like [`chaos_plain`].
#[job(queue = "chaos-default", backoff = ["200ms"])]
async fn chaos_flaky(ctx: gator_core::Context, id: u64) -> Result<(), String> {
    let attempts: u64 = redis::cmd("HINCRBY")
        .arg("chaos:attempts")
        .arg(id)
        .arg(1)
        .query_async(&mut chaos_connection().await?)
        .await
        .map_err(|e| e.to_string())?;
    if attempts == 1 {
        return Err("the first attempt of a flaky job fails on purpose".to_owned());
    }
    chaos_plain(ctx, id).await
}

/// Chaos suite: step `step` of chain `chain`: appends `step` to the list `chaos:chain:<chain>`
/// and counts its run under `id`, in one transaction so the list and the count agree.
#[job(queue = "chaos-default", backoff = ["200ms"])]
async fn chaos_step(
    ctx: gator_core::Context,
    chain: u64,
    step: u32,
    id: u64,
) -> Result<(), String> {
    let chain = format!("chaos:chain:{chain}");
    napped_run(
        id,
        record_step(&chain, CHAOS_RUNS, step, (id, ctx.attempt())),
    )
    .await
}

/// Chaos suite: step `step` of fan-out workflow `wf` (1, then 2 to 4 in parallel, then 5):
/// appends `step` to the list `chaos:wf:<wf>` and counts its run under `id` like
/// [`chaos_step`], and returns `id`. The fan-in (step 5) first checks that it sees its three
/// parents' results, and adds `wf` to the set `chaos:wf:short` if not.
#[job(queue = "chaos-default", backoff = ["200ms"])]
async fn chaos_wf_step(
    ctx: gator_core::Context,
    wf: u64,
    step: u32,
    id: u64,
) -> Result<u64, String> {
    wf_step_run(&ctx, "chaos:", wf, step, id).await
}

/// Chaos suite: waits up to two minutes for the reply to `chaos:reply:<id>`, then
/// [`chaos_answer`] runs with it.
#[job(queue = "chaos-wf-0", backoff = ["200ms"])]
async fn chaos_ask(ctx: gator_core::Context, id: u64) -> Result<(), String> {
    chaos_nap(id).await;
    ctx.await_reply_then(
        format!("chaos:reply:{id}"),
        Duration::from_secs(120),
        ChaosAnswer::call(id),
    );
    Ok(())
}

/// Chaos suite: the handler of [`chaos_ask`]'s reply (which must be its `id`): counts its run
/// like [`chaos_plain`]; a wrong reply is an error (retried, and never counted).
#[job(queue = "chaos-wf-1", backoff = ["200ms"])]
async fn chaos_answer(ctx: gator_core::Context, id: u64) -> Result<(), String> {
    match ctx.reply::<u64>().map_err(|e| e.to_string())? {
        Some(reply) if reply == id => napped_run(id, chaos_record(id, ctx.attempt())).await,
        other => Err(format!("chaos_answer {id} got the reply {other:?}")),
    }
}

/// Cluster chaos: [`chaos_wf_step`] with its keys under `{cchaos}`.
#[job(queue = "cc-0", backoff = ["200ms"])]
async fn cc_wf_step(ctx: gator_core::Context, wf: u64, step: u32, id: u64) -> Result<u64, String> {
    wf_step_run(&ctx, "{cchaos}:", wf, step, id).await
}

/// A fan-out workflow's step: the fan-in (step 5) checks that it sees its three parents'
/// results (else adds `wf` to `<prefix>wf:short`); then the run is recorded in
/// `<prefix>wf:<wf>` and `<prefix>runs`, and the step returns `id`.
async fn wf_step_run(
    ctx: &gator_core::Context,
    prefix: &str,
    wf: u64,
    step: u32,
    id: u64,
) -> Result<u64, String> {
    if step == 5 {
        let seen = ctx
            .parent_results_of::<u64>(ctx.job_name())
            .map_err(|e| e.to_string())?;
        if seen.len() != 3 {
            redis::cmd("SADD")
                .arg(format!("{prefix}wf:short"))
                .arg(wf)
                .query_async::<()>(&mut chaos_connection().await?)
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    let list = format!("{prefix}wf:{wf}");
    let runs = format!("{prefix}runs");
    napped_run(id, record_step(&list, &runs, step, (id, ctx.attempt()))).await?;
    Ok(id)
}

/// Chaos suite: an IO-bound job for the worker with 10,000 processors: waits 2–8 s (as a call
/// to a slow service would), then counts its run like [`chaos_plain`].
#[job(queue = "chaos-wide", backoff = ["200ms"])]
async fn chaos_wide(ctx: gator_core::Context, id: u64) -> Result<(), String> {
    let mix = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    tokio::time::sleep(Duration::from_millis(2000 + mix % 6000)).await;
    chaos_record(id, ctx.attempt()).await
}

/// Chaos suite: an expiring job, due to start by `deadline` (ms, Redis time). Records its
/// start on Redis's clock in `chaos:expiring` under `<id>:<attempt>:<pid>`: the instant its
/// worker judged it in time (`ctx.started_at()`, the time compared with the deadline in the
/// settling script), or, were it started by a path that skipped that judgement, its own read of
/// `TIME`, so the suite can check that no expiring job started after its deadline.
#[job(queue = "chaos-default", backoff = ["200ms"])]
async fn chaos_expiring(ctx: gator_core::Context, id: u64, deadline: u64) -> Result<(), String> {
    let _ = deadline; // the suite knows it; it travels here for the logs of a failed run
    let mut conn = chaos_connection().await?;
    let started = match ctx.started_at() {
        Some(at) => at
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_millis() as u64,
        None => {
            let (secs, micros): (u64, u64) = redis::cmd("TIME")
                .query_async(&mut conn)
                .await
                .map_err(|e| e.to_string())?;
            secs * 1000 + micros / 1000
        }
    };
    let key = format!("{id}:{}:{}", ctx.attempt(), std::process::id());
    redis::cmd("HSET")
        .arg("chaos:expiring")
        .arg(key)
        .arg(started)
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())
}

/// The worker's own Redis connection (the worker makes its client the default).
async fn chaos_connection() -> Result<gator_core::Connection, String> {
    let client = gator_core::default_client()
        .await
        .map_err(|e| e.to_string())?;
    Ok(client.connection())
}

/// `HINCRBY chaos:runs <id> 1`, and the attempt's run (see [`record_in`]).
async fn chaos_record(id: u64, attempt: u32) -> Result<(), String> {
    record_in(CHAOS_RUNS, id, attempt).await
}

const CHAOS_RUNS: &str = "chaos:runs";

/// `HINCRBY <runs> <id> 1`, `HINCRBY <runs>_by_attempt <id>:<attempt> 1` and
/// `HINCRBY <runs>_by_pid <id>:<attempt>:<pid> 1` in the same transaction: a run Gator repeats
/// has the same attempt twice, while a job that failed after its record was applied (the reply
/// lost in an outage) records its retry under the next attempt, which is the job's own doing,
/// not a duplicate. The pid says which process ran it, so a suite can tell an attempt run again
/// because its process was killed, or cut off past its lease, from any other.
async fn record_in(runs: &str, id: u64, attempt: u32) -> Result<(), String> {
    let pid = std::process::id();
    redis::pipe()
        .atomic()
        .hincr(runs, id, 1)
        .ignore()
        .hincr(format!("{runs}_by_attempt"), format!("{id}:{attempt}"), 1)
        .ignore()
        .hincr(format!("{runs}_by_pid"), format!("{id}:{attempt}:{pid}"), 1)
        .ignore()
        .query_async::<()>(&mut chaos_connection().await?)
        .await
        .map_err(|e| e.to_string())
}

/// Appends `step` to the list `chain` and counts a run of `id` (at `attempt`) in the hash
/// `runs` as [`record_in`] does, in one transaction so the list and the counts agree.
async fn record_step(
    chain: &str,
    runs: &str,
    step: u32,
    (id, attempt): (u64, u32),
) -> Result<(), String> {
    redis::pipe()
        .atomic()
        .rpush(chain, step)
        .ignore()
        .hincr(runs, id, 1)
        .ignore()
        .hincr(format!("{runs}_by_attempt"), format!("{id}:{attempt}"), 1)
        .ignore()
        .hincr(
            format!("{runs}_by_pid"),
            format!("{id}:{attempt}:{}", std::process::id()),
            1,
        )
        .ignore()
        .query_async::<()>(&mut chaos_connection().await?)
        .await
        .map_err(|e| e.to_string())
}

/// `record` between two naps, so that a killed worker dies holding jobs both before and after
/// they recorded.
async fn napped_run(
    id: u64,
    record: impl std::future::Future<Output = Result<(), String>>,
) -> Result<(), String> {
    chaos_nap(id).await;
    record.await?;
    chaos_nap(id).await;
    Ok(())
}

/// Sleeps 0–29 ms, varying with the job and the clock (no RNG crate needed for this). Two
/// naps a run cap 30 processors at about 1,000 jobs/s however fast the machine, so the chaos
/// test's events strike while jobs are still waiting.
async fn chaos_nap(id: u64) {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    let mix = (id ^ nanos).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    tokio::time::sleep(Duration::from_millis(mix % 30)).await;
}

// The cluster chaos suite's jobs (`tests/tests/cluster_chaos.rs`): the chaos jobs with their
// records under one hash tag, `{cchaos}`, so that a chain step's list and its count are one
// transaction on one node of a cluster.

/// Cluster chaos: counts a run of job `id` in the hash `{cchaos}:runs`, between two naps.
#[job(queue = "cc-0", backoff = ["200ms"])]
async fn cc_plain(ctx: gator_core::Context, id: u64) -> Result<(), String> {
    napped_run(id, record_in("{cchaos}:runs", id, ctx.attempt())).await
}

/// Cluster chaos: step `step` of chain `chain`: appends `step` to `{cchaos}:chain:<chain>` and
/// counts its run under `id`, in one transaction.
#[job(queue = "cc-0", backoff = ["200ms"])]
async fn cc_step(ctx: gator_core::Context, chain: u64, step: u32, id: u64) -> Result<(), String> {
    let list = format!("{{cchaos}}:chain:{chain}");
    let run = (id, ctx.attempt());
    napped_run(id, record_step(&list, "{cchaos}:runs", step, run)).await
}

fn main() -> std::process::ExitCode {
    gator_worker::main()
}

/// The flow-control probe: on start, in one atomic step, adds `cost` to the units running now
/// (`{flow}:running`, and per key in `{flow}:running_by`), raises `{flow}:max` and
/// `{flow}:max_by <key>` to what is running now, appends `id` to `{flow}:order` and records Redis's
/// time in `{flow}:started_at <id>`; then sleeps `millis` and takes its units off again. So a
/// test sees, across every process, the most units that ever ran at once.
#[job]
async fn flow_probe(id: u64, key: String, cost: u32, millis: u64) -> Result<(), String> {
    let mut conn = chaos_connection().await?;
    redis::Script::new(FLOW_PROBE_START)
        .key("{flow}:running")
        .key("{flow}:running_by")
        .key("{flow}:max")
        .key("{flow}:max_by")
        .key("{flow}:order")
        .key("{flow}:started_at")
        .arg(id)
        .arg(&key)
        .arg(cost)
        .invoke_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    tokio::time::sleep(Duration::from_millis(millis)).await;
    redis::pipe()
        .cmd("DECRBY")
        .arg("{flow}:running")
        .arg(cost)
        .ignore()
        .cmd("HINCRBY")
        .arg("{flow}:running_by")
        .arg(&key)
        .arg(-i64::from(cost))
        .ignore()
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())
}

/// KEYS: `{flow}:` running, running_by, max, max_by, order, started_at (one hash tag, so the
/// probe runs on a cluster too); ARGV: id, key, cost.
const FLOW_PROBE_START: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local running = redis.call('INCRBY', KEYS[1], ARGV[3])
local by_key = redis.call('HINCRBY', KEYS[2], ARGV[2], ARGV[3])
if running > (tonumber(redis.call('GET', KEYS[3])) or 0) then
  redis.call('SET', KEYS[3], running)
end
if by_key > (tonumber(redis.call('HGET', KEYS[4], ARGV[2])) or 0) then
  redis.call('HSET', KEYS[4], ARGV[2], by_key)
end
redis.call('RPUSH', KEYS[5], ARGV[1])
redis.call('HSET', KEYS[6], ARGV[1], now)
return running
";

/// The no-overlap probe (tests/tests/no_overlap.rs): on start, in one atomic step, counts
/// itself running under `key` (`{ovl}:running`) and in all (`{ovl}:running_all`), raises
/// `{ovl}:max <key>` and `{ovl}:max_all` to what runs now, appends `id` to `{ovl}:order` and
/// counts its run in `{ovl}:runs <id>`; then sleeps `millis` (a minute instead, once, if `id`
/// is in the set `{ovl}:hang`, so a test can kill it mid-run; a cancel ends that sleep unless
/// `id` was in `{ovl}:deaf` instead, deaf to cancels and shutdown), and counts itself off again. With `fail` (or cancelled), it then fails (the worker's default
/// backoff keeps it in the retry set for 15 s or more). Its keys share one hash tag, so it
/// runs on a cluster too.
#[job]
async fn overlap_probe(
    ctx: gator_core::Context,
    id: u64,
    key: String,
    millis: u64,
    fail: bool,
) -> Result<(), String> {
    let mut conn = chaos_connection().await?;
    let hang: u8 = redis::Script::new(OVERLAP_PROBE_START)
        .key("{ovl}:running")
        .key("{ovl}:max")
        .key("{ovl}:order")
        .key("{ovl}:runs")
        .key("{ovl}:hang")
        .key("{ovl}:running_all")
        .key("{ovl}:max_all")
        .key("{ovl}:deaf")
        .arg(id)
        .arg(&key)
        .invoke_async(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    let millis = if hang > 0 { 60_000 } else { millis };
    let cancel = async {
        if hang == 2 {
            std::future::pending::<()>().await;
        }
        ctx.cancelled().await;
    };
    let cancelled = tokio::select! {
        () = cancel => true,
        () = tokio::time::sleep(Duration::from_millis(millis)) => false,
    };
    redis::pipe()
        .atomic()
        .cmd("HINCRBY")
        .arg("{ovl}:running")
        .arg(&key)
        .arg(-1)
        .ignore()
        .cmd("DECR")
        .arg("{ovl}:running_all")
        .ignore()
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if fail || cancelled {
        return Err(format!("probe {id} fails on purpose or was cancelled"));
    }
    Ok(())
}

const OVERLAP_PROBE_START: &str = r"
local running = redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
if running > (tonumber(redis.call('HGET', KEYS[2], ARGV[2])) or 0) then
  redis.call('HSET', KEYS[2], ARGV[2], running)
end
local all = redis.call('INCR', KEYS[6])
if all > (tonumber(redis.call('GET', KEYS[7])) or 0) then
  redis.call('SET', KEYS[7], all)
end
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[4], ARGV[1], 1)
if redis.call('SREM', KEYS[8], ARGV[1]) == 1 then return 2 end
return redis.call('SREM', KEYS[5], ARGV[1])
";

/// Large-payload probe (tests/tests/large_payloads.rs): sets `test:started:<id>`, sleeps
/// `millis`, stores the `blob` it was given in `test:blob:<id>` (so a test compares it with
/// what it dispatched), then fails if `fail`.
#[job(queue = "large", retries = 1, backoff = ["100ms"])]
async fn keep_blob(id: u64, blob: String, fail: bool, millis: u64) -> Result<(), String> {
    let client = gator_core::default_client()
        .await
        .map_err(|e| e.to_string())?;
    let mut conn = client.connection();
    let set = |key: String, value: String| redis::cmd("SET").arg(key).arg(value).clone();
    set(format!("test:started:{id}"), "1".into())
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    tokio::time::sleep(Duration::from_millis(millis)).await;
    set(format!("test:blob:{id}"), blob)
        .query_async::<()>(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    if fail {
        return Err(format!("large job {id} fails as asked"));
    }
    Ok(())
}
