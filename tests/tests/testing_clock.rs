//! The fake clock of the testing mode (`gator_core::testing`), without Redis: `drain` runs
//! only what is due on it and `advance` moves it, so scheduled jobs, retries after their
//! backoff, jobs with time windows and cron ticks come due when a test says so.

use gator_core::flow::Windows;
use gator_core::retry::{RetryContext, RetryDecision};
use gator_core::{Context, JobError, State, testing};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const SECOND: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A fake with a fresh log as its jobs' state.
fn fake_with_log() -> (testing::Fake, Log) {
    let fake = testing::fake();
    let log = Log::default();
    fake.state(log.clone());
    (fake, log)
}

/// Logs its run.
#[gator_core::job(queue = "clock")]
async fn remind(ctx: Context, State(log): State<Log>, n: u32) {
    log.push(format!("remind {n} attempt {}", ctx.attempt()));
}

/// Fails its first `fails` attempts; two retries, 15 s after the first failure and a minute
/// after the second.
#[gator_core::job(queue = "clock", retries = 2, backoff = ["15s", "1m"])]
async fn flaky(ctx: Context, State(log): State<Log>, fails: u32) -> Result<(), String> {
    log.push(format!("flaky attempt {}", ctx.attempt()));
    if ctx.attempt() <= fails {
        return Err(format!("attempt {} failed", ctx.attempt()));
    }
    Ok(())
}

/// Refuses its input for good, with the default 25 retries left.
#[gator_core::job(queue = "clock")]
async fn refuses() -> Result<(), JobError> {
    Err(JobError::discard("bad input"))
}

/// A retry strategy that waits five minutes, whatever the backoff says.
fn in_five_minutes(_: &RetryContext<'_>) -> RetryDecision {
    RetryDecision::RetryIn(5 * MINUTE)
}

/// Fails its first attempt; its retry strategy decides when it runs again.
#[gator_core::job(queue = "clock", retry = in_five_minutes)]
async fn rate_limited(ctx: Context) -> Result<(), String> {
    match ctx.attempt() {
        1 => Err("429 Too Many Requests".into()),
        _ => Ok(()),
    }
}

/// Starts only between 05:00 and 06:00 in Berlin.
#[gator_core::job(queue = "clock", windows = ["05:00-06:00"], tz = "Europe/Berlin")]
async fn nightly(State(log): State<Log>) {
    log.push("nightly".into());
}

/// Every day at 05:00 UTC; logs the time of day it was created at, in seconds.
#[gator_core::job(queue = "reports", cron = "0 5 * * *")]
async fn morning_report(ctx: Context, State(log): State<Log>) {
    let created = ctx.created_at().duration_since(UNIX_EPOCH).unwrap();
    log.push(format!("report created at {}", created.as_secs() % 86_400));
}

/// Every second.
#[gator_core::job(queue = "ticks", cron = "* * * * * *")]
async fn every_second() {}

/// Dispatches itself again, forever.
#[gator_core::job(queue = "clock")]
async fn forever() -> Result<(), JobError> {
    Forever::call()
        .dispatch()
        .await
        .map_err(|e| JobError::new(e.to_string()))?;
    Ok(())
}

#[tokio::test]
async fn the_fake_clock_starts_at_the_real_time_and_moves_only_when_advanced() {
    let before = SystemTime::now();
    let fake = testing::fake();
    let start = fake.now();
    // To the millisecond.
    assert!(before - Duration::from_millis(1) < start && start <= SystemTime::now());
    assert_eq!(
        start.duration_since(UNIX_EPOCH).unwrap().subsec_nanos() % 1_000_000,
        0
    );
    tokio::task::yield_now().await;
    assert_eq!(fake.now(), start, "it stands still");
    fake.advance(5 * SECOND);
    assert_eq!(fake.now(), start + 5 * SECOND);
}

#[tokio::test]
async fn drain_leaves_a_job_due_in_an_hour_until_the_clock_gets_there() {
    let (fake, log) = fake_with_log();
    Remind::call(1).after(HOUR).dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 0, "not due yet");
    let waiting = fake.jobs();
    assert_eq!(waiting.len(), 1, "still recorded");
    assert_eq!(waiting[0].due, Some(fake.now() + HOUR));

    assert_eq!(fake.advance(59 * MINUTE).drain().await.ran, 0);
    assert_eq!(fake.advance(MINUTE).drain().await.ran, 1);
    assert!(fake.jobs().is_empty());
    assert_eq!(log.lines(), ["remind 1 attempt 1"]);
}

#[tokio::test]
async fn a_delay_counts_from_the_fake_clock_not_the_real_one() {
    let (fake, log) = fake_with_log();
    fake.advance(DAY);
    Remind::call(2).after(HOUR).dispatch().await.unwrap();
    assert_eq!(fake.jobs()[0].due, Some(fake.now() + HOUR));
    assert_eq!(
        fake.drain().await.ran,
        0,
        "due an hour after the fake's now"
    );
    assert_eq!(fake.advance(HOUR).drain().await.ran, 1);
    assert_eq!(log.lines(), ["remind 2 attempt 1"]);
}

#[tokio::test]
async fn dispatch_at_is_due_at_its_time_and_a_past_time_at_once() {
    let (fake, log) = fake_with_log();
    let later = fake.now() + 2 * HOUR;
    Remind::call(3).at(later).dispatch().await.unwrap();
    Remind::call(4)
        .at(fake.now() - HOUR)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(fake.jobs()[0].due, Some(later));
    assert_eq!(fake.drain().await.ran, 1);
    assert_eq!(log.lines(), ["remind 4 attempt 1"]);
    assert_eq!(fake.advance(2 * HOUR).drain().await.ran, 1);
    assert_eq!(log.lines()[1], "remind 3 attempt 1");
}

#[tokio::test]
async fn a_failed_job_is_retried_after_its_backoff_as_its_next_attempt() {
    let (fake, log) = fake_with_log();
    Flaky::call(1).dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 0);
    assert!(drained.failed.is_empty(), "{:?}", drained.failed);
    assert_eq!(drained.retried.len(), 1);
    assert_eq!(drained.retried[0].0.attempt, 1);
    assert_eq!(drained.retried[0].1, "attempt 1 failed");
    let jobs = fake.jobs();
    let retry = &jobs[0];
    assert_eq!(retry.attempt, 2);
    assert_eq!(
        retry.due,
        Some(fake.now() + 15 * SECOND),
        "its backoff: 15 s"
    );

    assert_eq!(fake.advance(14 * SECOND).drain().await.ran, 0, "not yet");
    assert_eq!(fake.advance(SECOND).drain().await.ran, 1);
    assert_eq!(log.lines(), ["flaky attempt 1", "flaky attempt 2"]);
    assert!(fake.jobs().is_empty());
}

#[tokio::test]
async fn a_job_out_of_retries_ends_failed_after_its_last_backoff() {
    let (fake, log) = fake_with_log();
    Flaky::call(5).dispatch().await.unwrap();
    assert_eq!(fake.drain().await.retried.len(), 1);
    let second = fake.advance(15 * SECOND).drain().await;
    assert_eq!(second.retried.len(), 1);
    assert_eq!(
        fake.jobs()[0].due,
        Some(fake.now() + MINUTE),
        "backoff's second delay"
    );

    let last = fake.advance(MINUTE).drain().await;
    assert!(last.retried.is_empty());
    assert_eq!(last.failed.len(), 1, "two retries, both spent");
    assert_eq!(last.failed[0].0.attempt, 3);
    assert_eq!(last.failed[0].1, "attempt 3 failed");
    assert!(fake.jobs().is_empty());
    assert_eq!(log.lines().len(), 3);
}

#[tokio::test]
async fn a_discarded_failure_ends_failed_without_a_retry() {
    let fake = testing::fake();
    Refuses::call().dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert!(drained.retried.is_empty());
    assert_eq!(drained.failed.len(), 1);
    assert_eq!(drained.failed[0].1, "bad input");
    assert!(fake.jobs().is_empty());
}

#[tokio::test]
async fn a_retry_strategy_decides_when_the_retry_is_due() {
    let fake = testing::fake();
    RateLimited::call().dispatch().await.unwrap();
    assert_eq!(fake.drain().await.retried.len(), 1);
    assert_eq!(fake.jobs()[0].due, Some(fake.now() + 5 * MINUTE));
    assert_eq!(fake.advance(5 * MINUTE).drain().await.ran, 1);
}

/// The window of `windows` that contains `at`, or else the next one.
fn window(windows: &Windows, at: SystemTime) -> (SystemTime, SystemTime) {
    let ms = at.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let (open, close) = windows.current_or_next(ms).unwrap();
    let time = |ms: i64| UNIX_EPOCH + Duration::from_millis(ms as u64);
    (time(open), time(close))
}

#[tokio::test]
async fn a_job_with_a_time_window_runs_only_inside_it_on_the_fake_clock() {
    let (fake, log) = fake_with_log();
    let windows = Windows::parse(&["05:00-06:00"], Some("Europe/Berlin")).unwrap();
    // Start where a window closes (06:00 in Berlin): the real time may be inside one.
    let (_, close) = window(&windows, fake.now());
    fake.advance(close.duration_since(fake.now()).unwrap());
    let (open, close) = window(&windows, fake.now());
    Nightly::call().dispatch().await.unwrap();
    assert_eq!(fake.drain().await.ran, 0, "outside its window");

    fake.advance(open.duration_since(fake.now()).unwrap() - SECOND);
    assert_eq!(fake.drain().await.ran, 0, "a second before it opens");
    assert_eq!(fake.advance(SECOND).drain().await.ran, 1, "05:00 in Berlin");
    assert_eq!(log.lines(), ["nightly"]);

    // At 06:00 the window has closed: a new one waits for the next day's.
    fake.advance(close.duration_since(fake.now()).unwrap());
    Nightly::call().dispatch().await.unwrap();
    assert_eq!(fake.drain().await.ran, 0);
    let (next, _) = window(&windows, fake.now());
    assert!(next > close);
    assert_eq!(
        fake.advance(next.duration_since(fake.now()).unwrap())
            .drain()
            .await
            .ran,
        1
    );
}

#[tokio::test]
async fn cron_jobs_tick_only_in_a_test_that_turns_them_on() {
    let fake = testing::fake();
    fake.advance(3 * DAY);
    assert!(fake.jobs().is_empty(), "{:?}", fake.jobs());
}

#[tokio::test]
async fn a_cron_job_is_recorded_once_per_tick_the_clock_crosses() {
    let (fake, log) = fake_with_log();
    fake.cron_of::<MorningReport>();
    assert!(fake.jobs().is_empty(), "nothing before the clock moves");
    fake.advance(3 * DAY);
    let ticks = fake.jobs_on("reports");
    assert_eq!(ticks.len(), 3, "{ticks:?}");
    assert!(
        ticks
            .iter()
            .all(|t| t.job == "morning_report" && t.due.is_none())
    );
    assert_eq!(fake.drain().await.ran, 3);
    assert_eq!(
        log.lines(),
        ["report created at 18000"; 3],
        "at its tick, 05:00 UTC"
    );

    fake.advance(DAY);
    assert_eq!(fake.dispatched::<MorningReport>().len(), 1);
}

#[tokio::test]
async fn only_ticks_after_the_clock_s_start_count() {
    let fake = testing::fake();
    fake.cron_of::<EverySecond>();
    fake.advance(SECOND);
    assert_eq!(
        fake.jobs_on("ticks").len(),
        1,
        "one whole second in (start, start + 1 s]"
    );
}

#[tokio::test]
async fn an_advance_records_at_most_ten_thousand_ticks_of_an_entry() {
    let fake = testing::fake();
    // Every entry of this binary, turned on twice: each ticks once per tick.
    fake.cron().cron();
    fake.advance(DAY);
    assert_eq!(fake.dispatched::<EverySecond>().len(), 10_000, "of 86,400");
    assert_eq!(fake.dispatched::<MorningReport>().len(), 1);

    fake.clear();
    fake.advance(365 * DAY);
    assert_eq!(
        fake.dispatched::<EverySecond>().len(),
        10_000,
        "a year ends too"
    );
}

#[tokio::test]
async fn drain_stops_after_ten_thousand_runs() {
    let fake = testing::fake();
    Forever::call().dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 10_000);
    assert_eq!(fake.jobs().len(), 1, "the next one is left recorded");
}
