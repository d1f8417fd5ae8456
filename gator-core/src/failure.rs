//! Why a job failed: [`JobError`], the value a failing job is recorded with. At the bottom of
//! the crate: a retry strategy reads it (`retry`), a job returns it, the worker
//! records it.

use std::fmt;

/// Why a job failed. Return one directly (`Err(JobError::discard("bad input"))`) to choose
/// whether it is retried; any other error type becomes a retryable `JobError` by its message.
#[derive(Debug, Clone)]
pub struct JobError {
    message: String,
    retryable: bool,
    /// Not a failure: the job stopped before it was done and asks to run again
    /// ([`JobError::interrupted`]).
    interrupted: bool,
    /// The typed error it was made from ([`JobError::caused_by`]), for a retry strategy.
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl PartialEq for JobError {
    fn eq(&self, other: &JobError) -> bool {
        self.message == other.message
            && self.retryable == other.retryable
            && self.interrupted == other.interrupted
    }
}

impl Eq for JobError {}

impl JobError {
    /// A failure that is retried with backoff. A message longer than
    /// [`gator_rules::MAX_ERROR_TEXT`] bytes is cut there, with a note of how much was cut:
    /// it is stored with every retry, logged and shown.
    pub fn new(message: impl Into<String>) -> JobError {
        JobError {
            message: bounded(message.into()),
            retryable: true,
            interrupted: false,
            source: None,
        }
    }

    /// Not a failure: the job stopped before it was done (it saw [`crate::Context::cancelled`]
    /// at shutdown, or a resource it needs is going away) and asks to run again from the start,
    /// its attempt not counted. While its worker shuts down it goes back to the head of its
    /// queue; otherwise it is due again a second later (so a job that always says so does not
    /// spin). A job whose context was cancelled by the worker's shutdown is treated so
    /// whatever error it returns.
    pub fn interrupted(message: impl Into<String>) -> JobError {
        JobError {
            message: bounded(message.into()),
            retryable: true,
            interrupted: true,
            source: None,
        }
    }

    /// A failure that waiting will not fix (bad input): the job goes straight to the dead set.
    pub fn discard(message: impl Into<String>) -> JobError {
        JobError {
            message: bounded(message.into()),
            retryable: false,
            interrupted: false,
            source: None,
        }
    }

    /// A retryable failure made from a typed error, kept so that a retry strategy can look at
    /// it ([`JobError::downcast_ref`]): for example a rate limit with its Retry-After.
    pub fn caused_by<E: std::error::Error + Send + Sync + 'static>(error: E) -> JobError {
        JobError {
            message: bounded(error.to_string()),
            retryable: true,
            interrupted: false,
            source: Some(std::sync::Arc::new(error)),
        }
    }

    /// The typed error this failure was made from, if it is an `E` ([`JobError::caused_by`]).
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.source.as_deref()?.downcast_ref::<E>()
    }

    /// The reason, as recorded in the payload's `error` field.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }

    /// Whether the job said it was interrupted ([`JobError::interrupted`]), not failed.
    pub fn is_interrupted(&self) -> bool {
        self.interrupted
    }
}

/// `message`, cut to [`gator_rules::MAX_ERROR_TEXT`] bytes.
fn bounded(message: String) -> String {
    match gator_rules::cut(&message, gator_rules::MAX_ERROR_TEXT) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(cut) => cut,
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JobError {}
