//! The transactional outbox in a worker process (the `postgres` feature): `--outbox URL`
//! (`GATOR_OUTBOX_URL`) runs one relay beside the worker's other loops, from the application's
//! PostgreSQL table to this worker's Redis ([`relay`]); the same flag names the database of
//! `gator-worker outbox` (`cli::outbox`). Without the feature the flag is still read, hidden,
//! so that a binary built without it refuses to start instead of leaving the rows unrelayed.

#[cfg(feature = "postgres")]
mod database;
#[cfg(feature = "postgres")]
pub mod relay;

#[cfg(feature = "postgres")]
pub use database::{OutboxConfig, OutboxDatabase};

/// `--outbox` and `--outbox-batch`: the relay's database and batch size.
#[cfg(feature = "postgres")]
#[derive(Debug, Clone, clap::Args)]
pub struct OutboxArgs {
    /// The PostgreSQL database whose transactional outbox this worker relays to Redis
    /// (`postgres://user:password@host:5432/app`): every worker given it runs one relay, and
    /// they share the rows. Also the database of the `outbox` subcommands. Its table comes from
    /// `gator-worker outbox migrate`.
    #[arg(long = "outbox", global = true, env = "GATOR_OUTBOX_URL", value_name = "URL", value_parser = OutboxDatabase::parse)]
    pub database: Option<OutboxDatabase>,

    /// Outbox rows the relay moves to Redis per batch (one PostgreSQL transaction, one Redis
    /// script per queue): 1 to 5000.
    #[arg(long, env = "GATOR_OUTBOX_BATCH", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=5000))]
    pub outbox_batch: u32,
}

#[cfg(feature = "postgres")]
impl OutboxArgs {
    /// Always `None`: this binary can relay.
    pub fn refusal(&self) -> Option<String> {
        None
    }

    /// The relay these flags ask for, if any.
    pub fn config(&self) -> Option<OutboxConfig> {
        self.database.clone().map(|database| OutboxConfig {
            database,
            batch: self.outbox_batch as usize,
        })
    }
}

/// `--outbox`, read only to be refused: this binary was built without the `postgres` feature.
#[cfg(not(feature = "postgres"))]
#[derive(Debug, Clone, clap::Args)]
pub struct OutboxArgs {
    /// Refused: this binary was built without the `postgres` feature.
    #[arg(
        long = "outbox",
        global = true,
        env = "GATOR_OUTBOX_URL",
        value_name = "URL",
        hide = true,
        hide_env_values = true
    )]
    pub database: Option<String>,
}

#[cfg(not(feature = "postgres"))]
impl OutboxArgs {
    /// Why the worker must not start: `--outbox` (or `GATOR_OUTBOX_URL`) was given to a binary
    /// that cannot relay, so the rows would wait for ever.
    pub fn refusal(&self) -> Option<String> {
        self.database.as_ref().map(|_| {
            "--outbox (GATOR_OUTBOX_URL) is set, but this gator-worker was built without the \
             `postgres` feature, so it cannot relay the outbox: build it with \
             `gator = { features = [\"postgres\"] }` (or gator-worker's `postgres`), or unset it"
                .to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Cli;
    use clap::Parser;

    const URL: &str = "postgres://app:s3cret@db.internal:5433/shop";

    #[cfg(feature = "postgres")]
    #[test]
    fn the_outbox_flags_make_a_relay_shown_without_its_password() {
        let cli = Cli::try_parse_from(["gator-worker", "--outbox", URL, "--outbox-batch", "50"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cli.outbox.refusal(), None);
        let config = cli.into_config().outbox.expect("a relay");
        assert_eq!(config.batch, 50);
        let shown = format!("{config:?} {}", config.database);
        assert!(
            shown.contains("postgres://app@db.internal:5433/shop"),
            "{shown}"
        );
        assert!(!shown.contains("s3cret"), "{shown}");
        for refused in ["redis://127.0.0.1:6379", "db.internal"] {
            assert!(Cli::try_parse_from(["gator-worker", "--outbox", refused]).is_err());
        }
        assert!(Cli::try_parse_from(["gator-worker", "--outbox-batch", "5001"]).is_err());
    }

    #[cfg(not(feature = "postgres"))]
    #[test]
    fn a_binary_without_postgres_refuses_the_outbox_flag_and_says_why() {
        let cli = Cli::try_parse_from(["gator-worker", "--outbox", URL])
            .unwrap_or_else(|e| panic!("{e}"));
        let refusal = cli.outbox.refusal().expect("refused");
        assert!(
            refusal.contains("without the `postgres` feature"),
            "{refusal}"
        );
        assert!(!refusal.contains("s3cret"), "{refusal}");
        let plain = Cli::try_parse_from(["gator-worker"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plain.outbox.refusal(), None);
    }
}
