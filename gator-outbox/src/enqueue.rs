//! Writing jobs into the outbox table, in the caller's transaction.

use crate::error::Result;
use gator_core::client::Via;
use gator_core::job::{Job, PendingJob};
use gator_core::outbox::{Sealed, seal};
use sqlx::PgConnection;

/// The statement of one row; sqlx prepares it once per connection.
const INSERT: &str =
    "INSERT INTO gator_outbox (jid, queue, job, payload, options) VALUES ($1, $2, $3, $4, $5)";

/// The statement of many rows at once, from arrays.
const INSERT_MANY: &str = "INSERT INTO gator_outbox (jid, queue, job, payload, options) \
     SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])";

/// Enqueues a job in a PostgreSQL transaction: `SendEmail::call(args).enqueue_in(&mut *tx)`.
pub trait EnqueueIn {
    /// Writes the job into the outbox table through `conn` (a transaction's `&mut *tx`, or any
    /// `&mut PgConnection`) and returns its jid. The job carries every option it was built
    /// with (queue, `.at`/`.after`, unique, flow options, expiry, headers and trace context),
    /// through the client middleware of the client it names (`.through(&client)`, else the
    /// default client if one is set), held to that client's payload limit. Redis is not
    /// asked: the job becomes visible to the relays when the transaction commits, and a
    /// rollback leaves nothing. A delay (`.after`, `expires_in`) counts from when Redis takes
    /// the job.
    fn enqueue_in(
        self,
        conn: &mut PgConnection,
    ) -> impl std::future::Future<Output = Result<String>> + Send;
}

impl<J: Job, C: Via + Send> EnqueueIn for PendingJob<J, C> {
    async fn enqueue_in(self, conn: &mut PgConnection) -> Result<String> {
        let sealed = seal(self)?;
        sqlx::query(INSERT)
            .bind(&sealed.jid)
            .bind(&sealed.queue)
            .bind(&sealed.job)
            .bind(&sealed.payload)
            .bind(&sealed.options)
            .execute(conn)
            .await?;
        Ok(sealed.jid)
    }
}

/// Enqueues many jobs of one type in one statement through `conn`; their jids in order.
/// Sealed as [`EnqueueIn::enqueue_in`] seals each: a job refused stores none of them.
pub async fn enqueue_many_in<J: Job, C: Via>(
    conn: &mut PgConnection,
    jobs: impl IntoIterator<Item = PendingJob<J, C>>,
) -> Result<Vec<String>> {
    let sealed = jobs
        .into_iter()
        .map(seal)
        .collect::<Result<Vec<Sealed>, _>>()?;
    let column = |f: fn(&Sealed) -> Option<&str>| -> Vec<Option<String>> {
        sealed.iter().map(|s| f(s).map(str::to_owned)).collect()
    };
    sqlx::query(INSERT_MANY)
        .bind(column(|s| Some(&s.jid)))
        .bind(column(|s| Some(&s.queue)))
        .bind(column(|s| Some(&s.job)))
        .bind(column(|s| Some(&s.payload)))
        .bind(column(|s| s.options.as_deref()))
        .execute(conn)
        .await?;
    Ok(sealed.into_iter().map(|s| s.jid).collect())
}
