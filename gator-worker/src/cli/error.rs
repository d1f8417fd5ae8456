//! Why an admin command failed: what `gator-worker` prints to stderr before it exits 1.

use gator_core::SetKind;

/// Why an admin command failed; printed to stderr.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Redis could not be reached (the error names the URL, its password redacted), or a bad
    /// queue name.
    #[error(transparent)]
    Core(#[from] gator_core::Error),
    /// No entry with that jid.
    #[error("no job {jid:?} in the {kind} set of {scope}")]
    NoSuchJob {
        /// The set searched.
        kind: SetKind,
        /// The jid asked for.
        jid: String,
        /// `queue "q"` or `any known queue`.
        scope: String,
    },
    /// No job with that jid in any known queue (never dispatched, deleted, or finished longer
    /// ago than the retention).
    #[error("no job {jid:?} in any known queue")]
    UnknownJob {
        /// The jid asked for.
        jid: String,
    },
    /// The job cannot be cancelled: it has finished.
    #[error("{reason}")]
    NotCancellable {
        /// Why.
        reason: String,
    },
    /// The entry exists but no worker could run it.
    #[error(
        "job {jid:?} in the {kind} set of queue {queue:?} is not a payload a worker could run, \
        so it stays; see it with `{kind} list --queue {queue}`, remove it with `{kind} delete {jid}`"
    )]
    NotRunnable {
        /// The set it is in.
        kind: SetKind,
        /// Its jid.
        jid: String,
        /// Its queue.
        queue: String,
    },
    /// The entry went between the lookup and the action: a worker promoted it, or another
    /// admin moved or deleted it.
    #[error(
        "job {jid:?} left the {kind} set of queue {queue:?} meanwhile (a worker or another admin moved or deleted it)"
    )]
    Gone {
        /// The set it was in.
        kind: SetKind,
        /// Its jid.
        jid: String,
        /// Its queue.
        queue: String,
    },
    /// PostgreSQL refused or could not be reached (`outbox` commands).
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Outbox(#[from] gator_outbox::Error),
    /// An `outbox` command without a database.
    #[cfg(feature = "postgres")]
    #[error(
        "no outbox database: give --outbox postgres://user:password@host:5432/database, or set GATOR_OUTBOX_URL"
    )]
    NoOutboxDatabase,
    /// The outbox's table is not in the database.
    #[cfg(feature = "postgres")]
    #[error(
        "the outbox table does not exist in {database}: run `gator-worker outbox migrate` first"
    )]
    NoOutboxTable {
        /// The database, without its password.
        database: String,
    },
    /// Writing to stdout failed.
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}
