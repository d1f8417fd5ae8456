//! Durable jobs waiting for a reply (`ctx.wait_for_reply`) in the testing mode
//! (`gator_core::testing`), without Redis: parked until `Fake::reply` answers them or their
//! timeout comes on the fake clock; inline, the wait fails the dispatch.

use gator_core::{Context, JobError, State, testing};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, line: impl Into<String>) {
        self.0.lock().unwrap().push(line.into());
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

/// Whether a drain made no run at all.
fn nothing_ran(drained: &testing::Drained) -> bool {
    drained.ran == 0
        && drained.retried.is_empty()
        && drained.failed.is_empty()
        && drained.suspended.is_empty()
}

/// Charges (a step), then waits up to an hour for the bank's answer; one retry a minute later.
#[gator_core::job(queue = "durable", retries = 1, backoff = ["1m"])]
async fn confirm(ctx: Context, State(log): State<Log>, order: u32) -> Result<String, JobError> {
    ctx.step("charge", || async {
        log.push(format!("charged {order} on attempt {}", ctx.attempt()));
        Ok::<_, JobError>(())
    })
    .await?;
    let answer: String = ctx.wait_for_reply(&format!("bank-{order}"), HOUR).await?;
    log.push(format!("bank said {answer} on attempt {}", ctx.attempt()));
    Ok(answer)
}

#[tokio::test]
async fn a_job_waiting_for_a_reply_is_parked_until_the_fake_replies_and_runs_on_with_it() {
    let (fake, log) = fake_with_log();
    Confirm::call(7).dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert_eq!(drained.suspended.len(), 1, "{drained:?}");
    assert_eq!(drained.suspended[0].1, "reply bank-7");
    assert_eq!(fake.jobs()[0].suspended.as_deref(), Some("reply bank-7"));
    assert!(nothing_ran(&fake.drain().await), "it waits");

    assert_eq!(fake.reply("bank-8", "no one waits"), 0);
    assert_eq!(fake.reply("bank-7", "approved"), 1);
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 1, "{drained:?}");
    assert_eq!(
        log.lines(),
        ["charged 7 on attempt 1", "bank said approved on attempt 1"]
    );
}

#[tokio::test]
async fn a_wait_for_a_reply_that_times_out_fails_its_attempt_and_the_retry_waits_again() {
    let (fake, log) = fake_with_log();
    Confirm::call(9).dispatch().await.unwrap();
    assert_eq!(fake.drain().await.suspended.len(), 1);
    fake.advance(HOUR);
    let drained = fake.drain().await;
    assert_eq!(drained.retried.len(), 1, "{drained:?}");
    assert_eq!(drained.retried[0].1, "no reply to \"bank-9\" in time");
    fake.advance(MINUTE);
    let drained = fake.drain().await;
    assert_eq!(
        drained.suspended.len(),
        1,
        "attempt 2 waits again: {drained:?}"
    );
    assert_eq!(fake.reply("bank-9", "approved"), 1);
    assert_eq!(fake.drain().await.ran, 1);
    assert_eq!(
        log.lines(),
        ["charged 9 on attempt 1", "bank said approved on attempt 2"],
        "the charge ran once"
    );
}

#[tokio::test]
async fn inline_a_wait_for_a_reply_fails_the_dispatch_saying_to_use_fake_mode() {
    let inline = testing::inline();
    inline.state(Log::default());
    let error = Confirm::call(1).dispatch().await.unwrap_err();
    assert!(error.to_string().contains("Fake::reply"), "{error}");
}
