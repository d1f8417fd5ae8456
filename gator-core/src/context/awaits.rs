//! A job's wait for a reply, as its [`Context`] asks for it ([`Context::await_reply`], and a
//! durable job's reply step, `Context::wait_for_reply`): what the worker takes once the run
//! ends.

use super::Context;
use std::time::Duration;

/// What a job asked for with [`Context::await_reply`].
#[derive(Debug, Clone)]
pub struct AwaitReply {
    /// The correlation key.
    pub key: String,
    /// How long it waits.
    pub timeout: Duration,
    /// The handler job's payload (JSON), or why it could not be encoded.
    pub then: Option<std::result::Result<String, String>>,
    /// A durable job's wait ([`Context::wait_for_reply`]): when the reply comes, the job runs
    /// again with the reply saved as a step's result, instead of ending done with it.
    pub resume: bool,
}

impl AwaitReply {
    /// A wait for the reply to `key`, up to `timeout`, then dispatching `then` with it.
    pub fn new(
        key: String,
        timeout: Duration,
        then: Option<std::result::Result<String, String>>,
    ) -> AwaitReply {
        AwaitReply {
            key,
            timeout,
            then,
            resume: false,
        }
    }
}

impl Context {
    /// Ends this attempt waiting for the reply to `key` (`Client::reply`, from any
    /// process), for up to `timeout`, once the job returns `Ok`: its processor is freed at
    /// once, and nothing waits in memory. When the reply comes, the job is done with the reply
    /// as its result: a chain or workflow goes on (the next step reads it with
    /// [`Context::parent_result`]). With no reply in time, the job fails with a timeout error
    /// and its retry policy applies. A job that returns `Err` fails as usual instead.
    pub fn await_reply(&self, key: impl Into<String>, timeout: std::time::Duration) {
        self.set_await(AwaitReply::new(key.into(), timeout, None));
    }

    pub(crate) fn set_await(&self, request: AwaitReply) {
        *self
            .inner
            .await_reply
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(request);
    }

    /// What [`Context::await_reply`] asked for, taken (the worker calls it once the job
    /// returned).
    pub fn take_await_reply(&self) -> Option<AwaitReply> {
        self.inner
            .await_reply
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}
