//! What can go wrong in the outbox.

/// An outbox error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// PostgreSQL refused a statement or could not be reached.
    #[error("postgres error: {0}")]
    Postgres(#[from] sqlx::Error),
    /// The job could not be sealed (a bad option, a refused payload), or Redis failed the relay.
    #[error(transparent)]
    Gator(#[from] gator_core::Error),
}

/// An outbox result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
