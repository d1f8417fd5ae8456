//! The README's "Testing your app's jobs" example compiles as shown: an app's own tests, in
//! fake and inline mode, around the app code they call (`sign_up`, its welcome mail job and the
//! `db` it takes as state). The README's two tests are ignored here: this file checks that the
//! README's code compiles, and the readme tests run no jobs (`tests/tests/testing_mode.rs`
//! tests the modes themselves).

#[path = "readme/check.rs"]
mod readme_check;

use gator_core::{State, job};

/// The app's database handle, given to the worker (here, to the drain) as state.
#[derive(Clone)]
pub struct Db;

#[allow(non_upper_case_globals)] // the README's tests call it `db`
const db: Db = Db;

/// The app's welcome mail, which its sign-up dispatches.
#[job]
async fn send_welcome_email(_user: u64, _email: String, State(_db): State<Db>) {}

/// The app code under test: it dispatches as in production, and the mode decides what happens.
async fn sign_up(user: u64, email: &str) -> gator_core::Result<()> {
    SendWelcomeEmail::call(user, email.to_owned())
        .dispatch()
        .await?;
    Ok(())
}

use gator_core::testing;

#[ignore = "the README's test: compiled here, not run (readme tests run no jobs)"]
#[tokio::test]
async fn signing_up_sends_a_welcome_mail() {
    let fake = testing::fake(); // this test's dispatches are recorded
    sign_up(7, "ada@example.com").await.unwrap(); // app code: SendWelcomeEmail::call(..).dispatch()

    fake.assert_dispatched::<SendWelcomeEmail>((7, "ada@example.com".to_owned()));
    assert_eq!(fake.jobs_on("default").len(), 1);
    let drained = fake.state(db.clone()).drain().await; // run them here, as a worker would
    assert!(drained.failed.is_empty());
}

#[ignore = "the README's test: compiled here, not run (readme tests run no jobs)"]
#[tokio::test]
async fn inline() {
    let _inline = testing::inline(); // each job runs at its dispatch
    sign_up(9, "grace@example.com").await.unwrap();
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_testing.rs");
    readme_check::assert_shows("### Testing your app's jobs", 1, here);
}
