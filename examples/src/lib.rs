//! A small shop on Gator: the jobs it runs in the background. `examples/enqueue.rs` dispatches
//! them and `examples/worker.rs` is the shop's worker binary; the README walks through both.

use gator::job;
use std::time::Duration;

/// Something went wrong talking to the (pretend) mail provider.
#[derive(Debug)]
pub struct MailError(pub String);

impl std::fmt::Display for MailError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mail provider refused: {}", self.0)
    }
}

/// Welcomes a new user by mail: an async job on the `default` queue.
#[job]
pub async fn send_welcome_email(user_id: u64, email: String) -> Result<(), MailError> {
    if !email.contains('@') {
        return Err(MailError(format!("{email:?} is not an address")));
    }
    tokio::time::sleep(Duration::from_millis(50)).await; // the provider's round trip
    println!("  [mail]   welcome mail sent to user {user_id} <{email}>");
    Ok(())
}

/// Charges an order: urgent money work, on the `high` queue.
#[job(queue = "high")]
pub async fn charge_card(order_id: u64, cents: u64) {
    tokio::time::sleep(Duration::from_millis(20)).await;
    println!(
        "  [charge] order {order_id} charged ${}.{:02}",
        cents / 100,
        cents % 100
    );
}

/// Makes a thumbnail: CPU-bound, so a plain (sync) fn; the worker runs it on a blocking thread.
#[job(name = "images.resize")]
pub fn resize_image(path: String, width: u32) {
    std::thread::sleep(Duration::from_millis(30)); // stands in for the pixel work
    println!("  [image]  {path} resized to {width}px");
}

/// The shop's sign-up, as its web handler would call it: the account is made, and the welcome
/// mail goes out in the background. `tests/app_tests.rs` tests it with Gator's testing mode,
/// without Redis.
pub async fn sign_up(user_id: u64, email: &str) -> gator::Result<String> {
    SendWelcomeEmail::call(user_id, email.to_owned())
        .dispatch()
        .await
}
