//! How an application tests its own code that dispatches jobs, with Gator's testing mode: no
//! Redis, and the app code unchanged (`sign_up` calls `dispatch` as in production).

use gator::testing;
use gator_examples::{SendWelcomeEmail, sign_up};

#[tokio::test]
async fn signing_up_sends_a_welcome_mail() {
    let fake = testing::fake();
    sign_up(7, "ada@example.com").await.unwrap();

    fake.assert_dispatched::<SendWelcomeEmail>((7, "ada@example.com".to_owned()));
    assert_eq!(fake.jobs_on("default").len(), 1);
    // Run it, as a worker would.
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 1, "{:?}", drained.failed);
    assert!(fake.jobs().is_empty());
}

#[tokio::test]
async fn a_bad_address_fails_the_mail_job() {
    let fake = testing::fake();
    sign_up(8, "not-an-address").await.unwrap();
    let drained = fake.drain().await;
    // Retried later, as a worker would (25 retries by default), not failed for good.
    assert_eq!(drained.retried.len(), 1);
    assert!(drained.retried[0].1.contains("is not an address"));
    assert_eq!(fake.jobs()[0].attempt, 2);
}

#[tokio::test]
async fn inline_mode_runs_the_job_at_its_dispatch() {
    let _inline = testing::inline();
    sign_up(9, "grace@example.com").await.unwrap();
    let failed = sign_up(10, "nope").await.unwrap_err();
    assert!(failed.to_string().contains("is not an address"), "{failed}");
}
