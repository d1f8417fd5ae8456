//! Jobs that wait for a reply from elsewhere (an HTTP callback, a Kafka message), matched by a
//! correlation key, as hipq does. A job calls [`Context::await_reply`](crate::context::Context) and
//! returns; any process answers with `Client::reply`.
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

pub use crate::context::AwaitReply;
use crate::context::Context;
use crate::error::Result;
use crate::job::{Job, JobError, PendingJob, encode};
pub use crate::store::reply::{DEFAULT_LOOKBACK, Delivery};

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

/// The longest correlation key, in bytes.
pub const MAX_KEY: usize = 512;

/// A correlation key: 1 to [`MAX_KEY`] bytes that show as themselves
/// ([`gator_rules::visible_name`], the rule of every name or key a user gives).
pub fn validate_key(key: &str) -> Result<()> {
    let problem = if key.len() > MAX_KEY {
        Err(format!("is {} bytes long (at most {MAX_KEY})", key.len()))
    } else {
        gator_rules::visible_name(key)
    };
    problem.map_err(|reason| crate::error::Error::InvalidReplyKey {
        key: key.chars().take(64).collect(),
        reason,
    })
}

/// What a job that waits for a reply calls on its context (the rest of the wait is in
/// `crate::context`, which knows no job type).
impl Context {
    /// [`Context::await_reply`], and when the reply comes, `handler` is dispatched with it: it
    /// reads the reply typed with [`Context::reply`]. (An error encoding `handler` fails this
    /// job when it returns.)
    pub fn await_reply_then<J: Job>(
        &self,
        key: impl Into<String>,
        timeout: std::time::Duration,
        handler: PendingJob<J>,
    ) {
        let handler = encode(handler).map(|e| e.payload.to_json());
        self.set_await(AwaitReply::new(
            key.into(),
            timeout,
            Some(handler.map_err(|e| e.to_string())),
        ));
    }

    /// For a handler job dispatched by [`Context::await_reply_then`]: the reply, decoded as a
    /// `T`; `Ok(None)` for any other job, an error if the reply is not a `T`.
    pub fn reply<T: serde::de::DeserializeOwned>(
        &self,
    ) -> std::result::Result<Option<T>, JobError> {
        let Some(json) = self.reply_text() else {
            return Ok(None);
        };
        serde_json::from_str(json)
            .map(Some)
            .map_err(|e| JobError::new(format!("the reply is not of the type asked for: {e}")))
    }
}
