//! The README's "Testing your app's jobs" example compiles as shown: an app's own tests, in
//! fake and inline mode, around the app code they call (`sign_up`, its welcome mail job and the
//! `db` it takes as state). The README's two tests run here as written: testing mode needs no
//! Redis (`tests/tests/testing_mode.rs` tests the modes themselves).

#[path = "readme/check.rs"]
mod readme_check;

use gator::{State, job};

/// The app's database handle, given to the worker (here, to the drain) as state.
#[derive(Clone)]
pub struct Db;

#[allow(non_upper_case_globals)] // the README's tests call it `db`
const db: Db = Db;

/// The app's welcome mail, which its sign-up dispatches.
#[job]
async fn send_welcome_email(_user: u64, _email: String, State(_db): State<Db>) {}

/// The app code under test: it dispatches as in production, and the mode decides what happens.
async fn sign_up(user: u64, email: &str) -> gator::Result<()> {
    SendWelcomeEmail::call(user, email.to_owned())
        .dispatch()
        .await?;
    Ok(())
}

/// A reminder, due later.
#[job]
async fn send_reminder(_user: u64) {}

/// Fails its first attempt, as the README's comment says; succeeds on the second.
#[job(retries = 2, backoff = ["15s", "1m"])]
async fn charge_card(_order: u64, ctx: gator::Context) -> Result<(), String> {
    if ctx.attempt() == 1 {
        return Err("card declined".into());
    }
    Ok(())
}

use gator::testing;
use std::time::Duration;

#[tokio::test]
async fn signing_up_sends_a_welcome_mail() {
    let fake = testing::fake(); // this test's dispatches are recorded
    sign_up(7, "ada@example.com").await.unwrap(); // app code: SendWelcomeEmail::call(..).dispatch()

    fake.assert_dispatched::<SendWelcomeEmail>((7, "ada@example.com".to_owned()));
    assert_eq!(fake.jobs_on("default").len(), 1);
    let drained = fake.state(db.clone()).drain().await; // run them here, as a worker would
    assert!(drained.failed.is_empty() && drained.retried.is_empty());
}

#[tokio::test]
async fn inline() {
    let inline = testing::inline(); // each job runs at its dispatch
    inline.state(db.clone()); // with the state a worker would give it
    sign_up(9, "grace@example.com").await.unwrap();
}

#[rustfmt::skip]
#[tokio::test]
async fn a_reminder_waits_an_hour_and_a_retry_15_s() {
    let fake = testing::fake();
    SendReminder::call(7).after(Duration::from_secs(3600)).dispatch().await.unwrap();
    assert_eq!(fake.drain().await.ran, 0);       // due in an hour on the fake clock
    fake.advance(Duration::from_secs(3600));
    assert_eq!(fake.drain().await.ran, 1);

    // #[job(retries = 2, backoff = ["15s", "1m"])], failing its first attempt:
    ChargeCard::call(7).dispatch().await.unwrap();
    assert_eq!(fake.drain().await.retried.len(), 1);
    assert_eq!(fake.jobs()[0].due, Some(fake.now() + Duration::from_secs(15)));
    fake.advance(Duration::from_secs(15));
    assert_eq!(fake.drain().await.ran, 1);       // attempt 2: ctx.attempt() == 2
}

async fn send_welcome(_user: u64) -> Result<(), gator::JobError> {
    Ok(())
}

async fn send_nudge(_user: u64) -> Result<(), gator::JobError> {
    Ok(())
}

/// Welcomes, sleeps a day, nudges: the guide's durable job.
#[job]
async fn remind(ctx: gator::Context, user: u64) -> Result<(), gator::JobError> {
    ctx.step("welcome", || send_welcome(user)).await?;
    ctx.sleep(Duration::from_secs(86_400)).await?;
    ctx.step("nudge", || send_nudge(user)).await?;
    Ok(())
}

#[rustfmt::skip]
#[tokio::test]
async fn a_durable_job_sleeps_on_the_fake_clock() {
    let fake = testing::fake();
    // #[job] async fn remind(ctx: Context, user: u64) -> Result<(), JobError>:
    //     ctx.step("welcome", || send_welcome(user)).await?;
    //     ctx.sleep(Duration::from_secs(86_400)).await?;
    //     ctx.step("nudge", || send_nudge(user)).await?;
    Remind::call(7).dispatch().await.unwrap();
    let drained = fake.drain().await;
    assert_eq!(drained.suspended[0].1, "sleep 1");      // welcome sent, then parked
    assert_eq!(fake.jobs()[0].due, Some(fake.now() + Duration::from_secs(86_400)));
    fake.advance(Duration::from_secs(86_400));
    assert_eq!(fake.drain().await.ran, 1);               // nudge sent; welcome not again
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_testing.rs");
    readme_check::assert_shows(
        "docs/guide/testing.md",
        "# Testing your app's jobs",
        1,
        here,
    );
    readme_check::assert_shows(
        "docs/guide/testing.md",
        "# Testing your app's jobs",
        2,
        here,
    );
}
