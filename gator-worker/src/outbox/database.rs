//! The outbox's database as the command line names it, and the small pool a worker (or a
//! command) opens on it.

use gator_outbox::sqlx::postgres::PgConnection;
use gator_outbox::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use gator_outbox::sqlx::{Connection as _, PgPool};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Connections a worker's relay holds at most: its listener, a batch, a count for its report,
/// and one spare. The application's own pool is where the load is; a relay needs few.
pub const POOL_SIZE: u32 = 4;

/// How long the relay waits for a connection (a new one included) before it calls PostgreSQL
/// unreachable and retries later: long enough for a slow network, short enough that a worker
/// pointed at a dead address says so within seconds.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A PostgreSQL database, parsed from its URL. Shown (`Display`, `Debug`) without its password.
#[derive(Clone)]
pub struct OutboxDatabase {
    // Boxed: the options are large, and a command line carries them.
    options: Box<PgConnectOptions>,
}

impl OutboxDatabase {
    /// Parses `postgres://user:password@host:port/database` (sqlx's URL: `?sslmode=require`
    /// and the rest). The error never repeats the URL, which may hold a password.
    pub fn parse(url: &str) -> Result<OutboxDatabase, String> {
        let refused =
            || "not a PostgreSQL URL: write postgres://user:password@host:5432/database".to_owned();
        // sqlx reads any scheme as PostgreSQL's; a Redis URL given here by mistake is not.
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(refused());
        }
        PgConnectOptions::from_str(url)
            .map(|options| OutboxDatabase {
                options: Box::new(options),
            })
            .map_err(|_| refused())
    }

    /// One connection of its own, within [`CONNECT_TIMEOUT`]: its error says why (refused,
    /// bad password, no such database), where a pool's says only that it timed out.
    pub async fn connect(&self) -> Result<PgConnection, gator_outbox::sqlx::Error> {
        match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect_with(&self.options)).await
        {
            Ok(connected) => connected,
            Err(_) => Err(gator_outbox::sqlx::Error::PoolTimedOut),
        }
    }

    /// A pool of at most [`POOL_SIZE`] connections, opened lazily: nothing connects until the
    /// first query, so a database that is down delays nothing else in the worker.
    pub fn pool(&self) -> PgPool {
        PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_lazy_with((*self.options).clone())
    }
}

impl fmt::Display for OutboxDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        write!(
            f,
            "postgres://{}@{}:{}/{}",
            o.get_username(),
            o.get_host(),
            o.get_port(),
            o.get_database().unwrap_or(o.get_username())
        )
    }
}

impl fmt::Debug for OutboxDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OutboxDatabase({self})")
    }
}

/// The relay a worker runs: `--outbox` and `--outbox-batch`.
#[derive(Debug, Clone)]
pub struct OutboxConfig {
    /// The database whose outbox it relays.
    pub database: OutboxDatabase,
    /// Rows per batch, 1 to [`gator_outbox::RelayConfig::MAX_BATCH`].
    pub batch: usize,
}
