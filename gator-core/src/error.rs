//! The one error type of gator-core: every fallible public fn returns [`Result`].

/// Everything that can go wrong when talking to Gator's Redis data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Redis refused a command, or could not be reached in time.
    #[error("redis error: {0}")]
    Redis(#[from] redis::RedisError),
    /// No pooled connection could be had (the pool is closed, or Redis is unreachable).
    #[error("could not get a redis connection: {0}")]
    Pool(String),
    /// The job's arguments, or a payload, could not be turned into JSON or back.
    #[error("json error: {0}")]
    Json(#[from] serde_json::Error),
    /// A queue name that Gator cannot use as a Redis hash tag.
    #[error(
        "invalid queue name {name:?}: use 1 to 128 characters from A-Z a-z 0-9 _ - . (no braces, colons or spaces)"
    )]
    InvalidQueueName {
        /// The name as given.
        name: String,
    },
    /// A namespace that would break the key layout.
    #[error(
        "invalid namespace {name:?}: use 1 to 64 characters from A-Z a-z 0-9 _ - . : (no braces or spaces)"
    )]
    InvalidNamespace {
        /// The namespace as given.
        name: String,
    },
    /// Two `#[job]`s in one binary claim the same wire name.
    #[error(
        "two jobs are registered with the wire name {name:?}: {first} and {second}; give one of them `#[job(name = \"...\")]`"
    )]
    DuplicateJobName {
        /// The wire name both use.
        name: String,
        /// Where the first one is defined (`module::fn at file:line`).
        first: String,
        /// Where the second one is defined.
        second: String,
    },
    /// A chain with no step was dispatched.
    #[error("a chain needs at least one step: add them with `.then(Job::call(..))`")]
    EmptyChain,
    /// A time that cannot be used to schedule a job.
    #[error("invalid schedule time: {reason}")]
    InvalidTime {
        /// Why the time was refused.
        reason: String,
    },
}

/// `Result` with gator-core's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<deadpool_redis::PoolError> for Error {
    fn from(e: deadpool_redis::PoolError) -> Self {
        Error::Pool(e.to_string())
    }
}
