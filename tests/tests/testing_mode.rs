//! The testing mode (`gator_core::testing`) without Redis: fake and inline, typed assertions,
//! drain with context and state, failures, and isolation between tests on other threads.
//! (The fake clock, retries, windows and cron: `testing_clock.rs`.)

use gator_core::{Context, JobError, State, testing};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[gator_core::job(queue = "mail")]
async fn welcome(_to: String, _first: bool) {}

/// Records its run in the state it is given, and dispatches a follow-up for `n > 0`.
#[gator_core::job(queue = "work")]
async fn countdown(ctx: Context, State(seen): State<Seen>, n: u32) -> Result<(), JobError> {
    seen.0
        .lock()
        .unwrap()
        .push(format!("{} {n} attempt {}", ctx.job_name(), ctx.attempt()));
    if n > 0 {
        Countdown::call(n - 1)
            .dispatch()
            .await
            .map_err(|e| JobError::new(e.to_string()))?;
    }
    Ok(())
}

/// Fails every attempt; the default retry policy (25 retries on Sidekiq's curve).
#[gator_core::job(queue = "work")]
async fn always_fails(why: String) -> Result<(), String> {
    Err(why)
}

#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

#[tokio::test]
async fn fake_records_every_kind_of_dispatch_typed() {
    let fake = testing::fake();
    let jid = Welcome::call("a@b.c".into(), true)
        .dispatch()
        .await
        .unwrap();
    Welcome::call("d@e.f".into(), false)
        .after(Duration::from_secs(60))
        .dispatch()
        .await
        .unwrap();
    gator_core::dispatch_many([Countdown::call(1), Countdown::call(2)])
        .await
        .unwrap();

    assert_eq!(fake.jobs().len(), 4);
    assert_eq!(fake.jobs()[0].jid, jid);
    assert_eq!(fake.jobs_on("mail").len(), 2);
    assert_eq!(fake.jobs_on("work").len(), 2);
    assert_eq!(
        fake.jobs()[1].due,
        Some(fake.now() + Duration::from_secs(60)),
        "dispatch_in records its due time, on the fake clock"
    );
    assert_eq!(fake.jobs()[0].due, None);
    assert!(fake.jobs().iter().all(|job| job.attempt == 1));
    assert_eq!(
        fake.dispatched::<Welcome>(),
        [("a@b.c".to_owned(), true), ("d@e.f".to_owned(), false)]
    );
    // One argument is written bare, as `dispatch_many` takes it.
    fake.assert_dispatched::<Countdown>(2);
    Countdown::dispatch_many(vec![5, 6]).await.unwrap();
    let countdowns = fake.dispatched::<Countdown>();
    assert!(countdowns.ends_with(&[5, 6]), "{countdowns:?}");
    fake.clear();
    assert!(fake.jobs().is_empty());
}

#[tokio::test]
#[should_panic(expected = "no welcome was dispatched with")]
async fn a_missing_dispatch_fails_the_assertion_with_the_list() {
    let fake = testing::fake();
    Welcome::call("a@b.c".into(), true)
        .dispatch()
        .await
        .unwrap();
    fake.assert_dispatched::<Welcome>(("x@y.z".into(), true));
}

#[tokio::test]
async fn drain_runs_jobs_with_their_context_and_state_and_what_they_dispatch() {
    let fake = testing::fake();
    let seen = Seen::default();
    fake.state(seen.clone());
    Countdown::call(2).dispatch().await.unwrap();
    AlwaysFails::call("on purpose".into())
        .dispatch()
        .await
        .unwrap();
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 3, "2, then the 1 and 0 it dispatched");
    // A failure with retries left is not the end: it waits for its retry, as on a worker.
    assert!(drained.failed.is_empty(), "{:?}", drained.failed);
    assert_eq!(drained.retried.len(), 1);
    assert_eq!(drained.retried[0].0.job, "always_fails");
    assert_eq!(drained.retried[0].0.attempt, 1);
    assert_eq!(drained.retried[0].1, "on purpose");
    let waiting = fake.jobs();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    assert_eq!(
        (waiting[0].job.as_str(), waiting[0].attempt),
        ("always_fails", 2)
    );
    // The default backoff's first delay: 15 s and up to 9 s of jitter.
    let wait = waiting[0].due.unwrap().duration_since(fake.now()).unwrap();
    assert!((15..=24).contains(&wait.as_secs()), "{wait:?}");
    assert_eq!(
        *seen.0.lock().unwrap(),
        [
            "countdown 2 attempt 1",
            "countdown 1 attempt 1",
            "countdown 0 attempt 1"
        ]
    );
}

#[tokio::test]
async fn inline_runs_each_job_at_its_dispatch() {
    let inline = testing::inline();
    let seen = Seen::default();
    inline.state(seen.clone());
    Countdown::call(1).dispatch().await.unwrap();
    assert_eq!(
        seen.0.lock().unwrap().len(),
        2,
        "it ran, and so did what it dispatched"
    );
    let failed = AlwaysFails::call("broken".into())
        .dispatch()
        .await
        .unwrap_err();
    assert!(
        matches!(&failed, gator_core::Error::InlineJobFailed { job, reason } if job == "always_fails" && reason == "broken"),
        "{failed}"
    );
}

#[test]
fn tests_on_other_threads_see_only_their_own_jobs() {
    static STARTED: AtomicU64 = AtomicU64::new(0);
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(async move {
                        let fake = testing::fake();
                        STARTED.fetch_add(1, Ordering::SeqCst);
                        // Every thread's mode is on before any dispatches.
                        while STARTED.load(Ordering::SeqCst) < 4 {
                            tokio::task::yield_now().await;
                        }
                        for n in 0..=t {
                            Countdown::call(t * 10 + n).dispatch().await.unwrap();
                        }
                        fake.dispatched::<Countdown>()
                    })
            })
        })
        .collect();
    for (t, thread) in threads.into_iter().enumerate() {
        let t = t as u32;
        let expected: Vec<u32> = (0..=t).map(|n| t * 10 + n).collect();
        assert_eq!(thread.join().unwrap(), expected);
    }
}

#[tokio::test]
async fn the_mode_ends_with_its_guard() {
    {
        let fake = testing::fake();
        Welcome::call("a@b.c".into(), true)
            .dispatch()
            .await
            .unwrap();
        assert_eq!(fake.jobs().len(), 1);
    }
    let fake = testing::fake();
    assert!(fake.jobs().is_empty(), "a new mode starts empty");
}
