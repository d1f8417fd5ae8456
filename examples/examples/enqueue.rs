//! Dispatches the shop's jobs: 12 welcome mails and 4 thumbnails on `default`, 12 card charges
//! on `high`, and one mail scheduled 2 seconds ahead.
//!
//! Run: `cargo run -p gator-examples --example enqueue`
//! (GATOR_REDIS_URL picks the Redis; default redis://127.0.0.1:6379.)

use gator_examples::{ChargeCard, ResizeImage, SendWelcomeEmail};
use std::time::Duration;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    for user in 1..=12 {
        SendWelcomeEmail::dispatch(user, format!("user{user}@example.com")).await?;
    }
    // Many at once: one round trip.
    let jids =
        ChargeCard::dispatch_many((1..=12).map(|order| (1000 + order, 1999 + order * 100))).await?;
    for n in 1..=4 {
        ResizeImage::dispatch(format!("photos/{n}.png"), 320).await?;
    }
    let later =
        SendWelcomeEmail::dispatch_in(Duration::from_secs(2), 99, "late@example.com".into())
            .await?;
    println!(
        "enqueued 12 mails and 4 thumbnails on `default`, {} charges on `high`",
        jids.len()
    );
    println!("scheduled one more mail for 2 s from now (jid {later})");
    Ok(())
}
