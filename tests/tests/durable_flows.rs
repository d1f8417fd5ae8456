//! Durable jobs under flow control, on a real Redis with in-process workers: a sleeping job
//! holds no concurrency unit, a woken one passes its queue's limit, rate and windows again,
//! and a checkpoint keeps the job's unit with it until it ends. Workflows and chains:
//! `durable_workflows.rs`.

use gator_core::flow::{FlowSetting, RateSpec, Windows};
use gator_core::{Context, JobError, JobStatus, job};
use gator_tests::{RedisServer, TestWorker, client, set_flow, wait_until};
use gator_worker::{QueueSelection, WorkerConfig};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the jobs below did, by test: `(tag, event)` in order.
static EVENTS: Mutex<Vec<(String, String, Instant)>> = Mutex::new(Vec::new());

fn note(tag: &str, event: impl Into<String>) {
    let at = Instant::now();
    EVENTS
        .lock()
        .unwrap()
        .push((tag.to_owned(), event.into(), at));
}

/// When `event` of `tag` happened first.
fn when(tag: &str, event: &str) -> Instant {
    let events = EVENTS.lock().unwrap();
    let found = events.iter().find(|(t, e, _)| t == tag && e == event);
    found.map(|(_, _, at)| *at).expect("the event happened")
}

fn events(tag: &str) -> Vec<String> {
    let events = EVENTS.lock().unwrap();
    events
        .iter()
        .filter(|(t, _, _)| t == tag)
        .map(|(_, e, _)| e.clone())
        .collect()
}

/// Notes a step, sleeps `millis`, notes that it woke; returns `millis`.
#[job(queue = "df_limit")]
async fn nap(ctx: Context, tag: String, millis: u64) -> Result<u64, JobError> {
    ctx.step("before", || async {
        note(&tag, "nap before");
        Ok::<_, JobError>(())
    })
    .await?;
    ctx.sleep(Duration::from_millis(millis)).await?;
    note(&tag, "nap after");
    Ok(millis)
}

/// Notes its start, runs `millis`, notes its end.
#[job(queue = "df_limit")]
async fn hold(tag: String, millis: u64) {
    note(&tag, "hold start");
    tokio::time::sleep(Duration::from_millis(millis)).await;
    note(&tag, "hold end");
}

/// Saves a checkpoint, then succeeds.
#[job(queue = "df_limit")]
async fn save_then_finish(ctx: Context, tag: String) -> Result<(), JobError> {
    ctx.checkpoint(&1u32).await?;
    note(&tag, "saved and finished");
    Ok(())
}

/// Copies of this job that started (a payload pushed twice runs twice).
static TWIN_STARTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Waits until both copies of its payload run, then saves a step whose result differs
/// between them.
#[job(queue = "df_twins")]
async fn twin(ctx: Context, tag: String) -> Result<(), JobError> {
    use std::sync::atomic::Ordering::SeqCst;
    let n = TWIN_STARTS.fetch_add(1, SeqCst) + 1;
    let deadline = Instant::now() + Duration::from_secs(10);
    while TWIN_STARTS.load(SeqCst) < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ctx.step("copy", || async { Ok::<_, JobError>(n) }).await?;
    note(&tag, "twin done");
    Ok(())
}

fn worker(redis: &RedisServer, queue: &str, concurrency: usize) -> TestWorker {
    let mut config = WorkerConfig::new(redis.url());
    config.queues = QueueSelection::Strict(vec![queue.into()]);
    config.concurrency = concurrency;
    config.poll_interval = Duration::from_millis(100);
    config.shutdown_timeout = Duration::from_secs(2);
    TestWorker::start_with(config)
}

async fn status(client: &gator_core::Client, jid: &str) -> JobStatus {
    client.status(jid).await.unwrap()
}

async fn wait_for(client: &gator_core::Client, jid: &str, what: &str, ok: fn(&JobStatus) -> bool) {
    wait_until(what, Duration::from_secs(20), || async {
        ok(&status(client, jid).await)
    })
    .await;
}

fn is_done(status: &JobStatus) -> bool {
    matches!(status, JobStatus::Done { .. })
}

fn is_suspended(status: &JobStatus) -> bool {
    matches!(status, JobStatus::Suspended { .. })
}

/// Units the queue's `used` hash holds in total (0 once every unit is released).
async fn units_in_use(redis: &RedisServer, queue: &str) -> u64 {
    let mut conn = redis.client().await;
    let used: Option<u64> = redis::cmd("HGET")
        .arg(format!("gator:{{{queue}}}:used"))
        .arg("!total")
        .query_async(&mut conn)
        .await
        .unwrap();
    used.unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_job_holds_no_unit_so_another_job_runs_under_a_limit_of_one() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    set_flow(&client, "df_limit", &[FlowSetting::Limit(Some(1))]).await;
    let tag = "unit_free";
    // Long enough that the other job, a poll away, runs well inside it.
    let sleeper = Nap::call(tag.into(), 8_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "df_limit", 2);
    wait_for(&client, &sleeper, "the sleeper to suspend", is_suspended).await;
    assert_eq!(
        units_in_use(&redis, "df_limit").await,
        0,
        "the sleeper holds no unit"
    );

    let other = Hold::call(tag.into(), 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_for(
        &client,
        &other,
        "the other job to run while the sleeper sleeps",
        is_done,
    )
    .await;
    assert!(
        is_suspended(&status(&client, &sleeper).await),
        "the sleeper still sleeps"
    );
    wait_for(&client, &sleeper, "the sleeper to finish", is_done).await;
    worker.stop().await;
    assert_eq!(
        events(tag),
        ["nap before", "hold start", "hold end", "nap after"]
    );
    assert_eq!(units_in_use(&redis, "df_limit").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_woken_job_waits_for_a_unit_while_its_queue_is_at_its_limit() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    set_flow(&client, "df_limit", &[FlowSetting::Limit(Some(1))]).await;
    let tag = "unit_again";
    let sleeper = Nap::call(tag.into(), 2_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "df_limit", 2);
    wait_for(&client, &sleeper, "the sleeper to suspend", is_suspended).await;
    // It takes the only unit while the sleeper sleeps, and keeps it long past the wake time.
    let holder = Hold::call(tag.into(), 6_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the holder to start", Duration::from_secs(10), || async {
        events(tag).contains(&"hold start".to_owned())
    })
    .await;
    assert!(
        is_suspended(&status(&client, &sleeper).await),
        "the holder started before the sleeper's wake time"
    );
    wait_for(&client, &sleeper, "the sleeper to finish", is_done).await;
    assert!(is_done(&status(&client, &holder).await));
    worker.stop().await;
    assert_eq!(
        events(tag),
        ["nap before", "hold start", "hold end", "nap after"],
        "the woken sleeper ran only once the holder let its unit go"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_woken_job_takes_a_rate_limit_token_again_before_it_goes_on() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let rate = "1/4s".parse::<RateSpec>().unwrap();
    let setting = FlowSetting::Rate {
        name: None,
        rate: Some(rate),
    };
    set_flow(&client, "df_rate", &[setting]).await;
    let tag = "rate_again";
    let sleeper = Nap::call(tag.into(), 200)
        .queue("df_rate")
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "df_rate", 2);
    wait_for(&client, &sleeper, "the sleeper to finish", is_done).await;
    worker.stop().await;
    assert_eq!(events(tag), ["nap before", "nap after"]);
    // Its first run took the only token of the rate's 4 s; woken 200 ms later, it waited for
    // the next one. (A resumed run that skipped the limiter would go on ~300 ms after.)
    let waited = when(tag, "nap after") - when(tag, "nap before");
    assert!(
        waited >= Duration::from_millis(3_000),
        "the resumed run went on {waited:?} after the first, inside the rate's 4 s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_checkpoints_on_a_controlled_queue_releases_its_unit_when_it_succeeds() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    set_flow(&client, "df_limit", &[FlowSetting::Limit(Some(1))]).await;
    let tag = "unit_moved";
    let saver = SaveThenFinish::call(tag.into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let next = Hold::call(tag.into(), 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "df_limit", 1);
    wait_for(&client, &saver, "the saver to finish", is_done).await;
    // The unit it took follows its payload through the save: its end releases it, and the
    // next job of the queue gets it.
    wait_for(&client, &next, "the next job to get the unit", is_done).await;
    wait_until("every unit released", Duration::from_secs(10), || async {
        units_in_use(&redis, "df_limit").await == 0
    })
    .await;
    worker.stop().await;
    assert_eq!(
        events(tag),
        ["saved and finished", "hold start", "hold end"]
    );
}

/// A payload pushed twice by another producer runs as two copies in one process, its units
/// counted twice under one entry; each copy's save must carry one of them, so that the two
/// ends release both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_copies_of_one_payload_that_save_different_steps_release_both_units() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let tag = "twins";
    Twin::call(tag.into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let mut conn = redis.client().await;
    let list = "gator:{df_twins}:queue";
    let payload: String = redis::cmd("LINDEX")
        .arg(list)
        .arg(0)
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("RPUSH")
        .arg(list)
        .arg(&payload)
        .query_async(&mut conn)
        .await
        .unwrap();
    // Controlled from now on: the backlog of two is parked, then both are admitted.
    set_flow(&client, "df_twins", &[FlowSetting::Limit(Some(2))]).await;
    let worker = worker(&redis, "df_twins", 2);
    wait_until("both copies to end", Duration::from_secs(20), || async {
        events(tag).len() == 2
    })
    .await;
    wait_until("every unit released", Duration::from_secs(10), || async {
        units_in_use(&redis, "df_twins").await == 0
    })
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_woken_job_waits_while_its_queues_window_is_closed() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    set_flow(&client, "df_limit", &[FlowSetting::Limit(Some(4))]).await;
    let tag = "window";
    let sleeper = Nap::call(tag.into(), 1_000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis, "df_limit", 2);
    wait_for(&client, &sleeper, "the sleeper to suspend", is_suspended).await;
    // While it sleeps, the queue's only window moves to 2 hours from now (UTC).
    let now = client.redis_time().await.unwrap() as i64;
    let hhmm = |ms: i64| {
        let min = (ms / 60_000).rem_euclid(24 * 60);
        format!("{:02}:{:02}", min / 60, min % 60)
    };
    let window = |from: i64, to: i64| {
        let text = format!("{}-{}", hhmm(from), hhmm(to));
        FlowSetting::Windows(Some(Windows::parse(&[text.as_str()], None).unwrap()))
    };
    set_flow(
        &client,
        "df_limit",
        &[window(now + 7_200_000, now + 10_800_000)],
    )
    .await;
    wait_for(&client, &sleeper, "the sleeper to wake and wait", |s| {
        matches!(s, JobStatus::Queued)
    })
    .await;
    // As flow_control.rs checks a closed window: what would run does so in a poll (100 ms).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(events(tag), ["nap before"], "not run outside the window");
    set_flow(
        &client,
        "df_limit",
        &[window(now - 60_000, now + 3_600_000)],
    )
    .await;
    wait_for(&client, &sleeper, "the sleeper to finish", is_done).await;
    worker.stop().await;
    assert_eq!(events(tag), ["nap before", "nap after"]);
}
