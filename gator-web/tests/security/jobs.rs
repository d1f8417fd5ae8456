//! The jobs the in-process workers of these tests run, and what they saw.

use gator_core::job;
use gator_tests::Notes;

/// What the jobs ran with.
pub static RAN: Notes = Notes::new();

/// A job on queue `web` taking a text.
#[job(queue = "web", retries = 0)]
pub async fn send_email(to: String) {
    // The start only: tests send megabytes; their tag comes first.
    RAN.push(format!("{} sent", &to[..to.len().min(40)]));
}

/// A job taking a number: a text where it wants the number does not fit.
#[job(queue = "web", retries = 0)]
pub async fn count_to(n: u32) {
    RAN.push(format!("count {n}"));
}
