//! Jobs that wait for a reply from elsewhere (an HTTP callback, a Kafka message), matched by a
//! correlation key, as hipq does. A job calls [`Context::await_reply`](crate::Context) and
//! returns; any process answers with [`Client::reply`].
//!
//! ```no_run
//! use gator_core::{Client, Context, JobError, job};
//! use std::time::Duration;
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Confirmation { order: u64, accepted: bool }
//!
//! #[job(queue = "orders")]
//! async fn place_order(ctx: Context, order: u64) -> Result<(), JobError> {
//!     // ... send the order to the partner, who confirms later on a webhook ...
//!     ctx.await_reply_then(
//!         format!("order:{order}"),
//!         Duration::from_secs(300),
//!         ConfirmOrder::call(order),
//!     );
//!     Ok(())
//! }
//!
//! #[job(queue = "orders")]
//! async fn confirm_order(ctx: Context, order: u64) -> Result<(), JobError> {
//!     let confirmation: Option<Confirmation> = ctx.reply()?;
//!     Ok(())
//! }
//!
//! // In the webhook handler, in any process:
//! # async fn webhook(client: Client) -> gator_core::Result<()> {
//! client.reply("order:1234", &Confirmation { order: 1234, accepted: true }).await?;
//! # Ok(()) }
//! ```
//!
//! How the wait is kept, matched and timed out, crash-safe: `store::reply`.

use crate::error::Result;
pub use crate::store::reply::{DEFAULT_LOOKBACK, Delivery};
use std::time::Duration;

/// What a job asked for with [`crate::Context::await_reply`].
#[derive(Debug, Clone)]
pub struct AwaitReply {
    /// The correlation key.
    pub key: String,
    /// How long it waits.
    pub timeout: Duration,
    /// The handler job's payload (JSON), or why it could not be encoded.
    pub then: Option<std::result::Result<String, String>>,
}

impl AwaitReply {
    /// A wait for the reply to `key`, up to `timeout`, then dispatching `then` with it.
    pub fn new(
        key: String,
        timeout: Duration,
        then: Option<std::result::Result<String, String>>,
    ) -> AwaitReply {
        AwaitReply { key, timeout, then }
    }
}

/// The counters of replies since the namespace was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplyStats {
    /// Replies that reached their waiting job.
    pub delivered: u64,
    /// Replies kept for a wait that had not registered yet.
    pub kept: u64,
    /// Replies dropped because one came first for the same key.
    pub duplicates: u64,
    /// Waits that timed out.
    pub timeouts: u64,
}

/// A correlation key: 1 to 512 bytes.
pub fn validate_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > 512 {
        return Err(crate::Error::InvalidReplyKey {
            key: key.chars().take(64).collect(),
        });
    }
    Ok(())
}
