//! The relay: an embeddable task that moves committed outbox rows into Redis until it is
//! told to stop. `gator-worker --outbox URL` runs one per worker process; an app can run its
//! own with [`Relay::run`].

use crate::batch::{self, Moved};
use crate::error::Result;
use crate::inspect;
use crate::schema::CHANNEL;
use gator_core::Client;
use gator_core::outbox::{Report, publish};
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How a relay works.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Rows per batch (one transaction, one Redis script per queue). Default 500, at most
    /// [`RelayConfig::MAX_BATCH`].
    pub batch: usize,
    /// How often the relay looks for rows when no NOTIFY came: the fallback for a lost
    /// notification or a listener that is reconnecting. Default 5 s.
    pub poll: Duration,
    /// How often it counts the outbox and reports (metrics, and Redis for the dashboard).
    /// Default 5 s.
    pub report_every: Duration,
    /// Its id in reports: the worker process's id, or a name of the app's choosing.
    pub id: String,
}

impl RelayConfig {
    /// The largest batch: a transaction and a Redis script of this many rows stay short.
    pub const MAX_BATCH: usize = 5_000;
}

impl Default for RelayConfig {
    fn default() -> RelayConfig {
        RelayConfig {
            batch: 500,
            poll: Duration::from_secs(5),
            report_every: Duration::from_secs(5),
            id: format!("relay-{}", std::process::id()),
        }
    }
}

/// A relay from the outbox table at `pool` to the Redis of `client`.
#[derive(Debug, Clone)]
pub struct Relay {
    pool: PgPool,
    client: Client,
    config: RelayConfig,
}

/// How long a relay waits after PostgreSQL or Redis failed it, doubling up to the last.
const BACKOFF: [Duration; 4] = [
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
];

impl Relay {
    /// A relay with the default [`RelayConfig`]. It relays through `client` (its namespace,
    /// payload limit and replica wait).
    pub fn new(pool: PgPool, client: Client) -> Relay {
        Relay::with_config(pool, client, RelayConfig::default())
    }

    /// A relay configured by `config` (a batch clamped to 1..=[`RelayConfig::MAX_BATCH`]).
    pub fn with_config(pool: PgPool, client: Client, mut config: RelayConfig) -> Relay {
        config.batch = config.batch.clamp(1, RelayConfig::MAX_BATCH);
        Relay {
            pool,
            client,
            config,
        }
    }

    /// Relays every waiting row it can take now, batch after batch; how many rows it moved
    /// into Redis (dead ones aside). What `run` does on each wake-up; a test can call it.
    pub async fn drain(&self) -> Result<u64> {
        let mut moved = 0;
        loop {
            let Moved { taken, relayed, .. } =
                batch::run(&self.pool, &self.client, self.config.batch).await?;
            moved += relayed as u64;
            metrics::counter!("gator_outbox_relayed_total").increment(relayed as u64);
            if taken < self.config.batch {
                return Ok(moved);
            }
        }
    }

    /// Runs until `stop` is cancelled: listens on the outbox's channel, drains on every
    /// notification and every [`RelayConfig::poll`], reports every
    /// [`RelayConfig::report_every`]. PostgreSQL or Redis away is waited out (logged, then
    /// retried with a growing pause); the listener reconnects by itself.
    pub async fn run(self, stop: CancellationToken) {
        let mut listener = None;
        let mut outage = Outage::default();
        let mut meter = Meter::new();
        while !stop.is_cancelled() {
            if listener.is_none() {
                listener = self.listen().await;
            }
            match self.drain().await {
                Ok(moved) => {
                    outage.ended();
                    meter.add(moved);
                }
                Err(e) => {
                    let pause = outage.failed(&e);
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(pause) => continue,
                    }
                }
            }
            if meter.due(self.config.report_every) {
                self.report(&mut meter).await;
            }
            let wait = self.config.poll.min(self.config.report_every);
            tokio::select! {
                () = stop.cancelled() => return,
                woke = wake(&mut listener, wait) => {
                    if !woke { listener = None; }
                }
            }
        }
    }

    /// A listener on the outbox's channel; `None` (logged) if PostgreSQL is away: the poll
    /// carries on until it is back.
    async fn listen(&self) -> Option<PgListener> {
        let attempt = async {
            let mut listener = PgListener::connect_with(&self.pool).await?;
            listener.listen(CHANNEL).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        match attempt.await {
            Ok(listener) => Some(listener),
            Err(e) => {
                tracing::debug!(error = %e, "outbox relay cannot listen; polling");
                None
            }
        }
    }

    /// Counts the outbox and reports it: as gauges, and in Redis for the dashboard.
    async fn report(&self, meter: &mut Meter) {
        let rate = meter.rate();
        let status = match inspect::status(&self.pool).await {
            Ok(status) => status,
            Err(e) => {
                tracing::debug!(error = %e, "outbox relay could not count the outbox");
                return;
            }
        };
        metrics::gauge!("gator_outbox_waiting").set(status.waiting as f64);
        metrics::gauge!("gator_outbox_dead").set(status.dead as f64);
        metrics::gauge!("gator_outbox_lag_seconds").set(status.lag.as_secs_f64());
        metrics::gauge!("gator_outbox_rows_per_second").set(rate);
        let report = Report {
            relay: self.config.id.clone(),
            at_ms: 0,
            waiting: status.waiting,
            dead: status.dead,
            lag_ms: u64::try_from(status.lag.as_millis()).unwrap_or(u64::MAX),
            rows_per_second: rate,
            relayed: meter.total,
        };
        if let Err(e) = publish(&self.client, report).await {
            tracing::debug!(error = %e, "outbox relay could not report to Redis");
        }
    }
}

/// Waits up to `wait` for a notification: true if one came or the wait ran out, false if the
/// listener is gone (PostgreSQL restarted: a new one is made on the next round).
async fn wake(listener: &mut Option<PgListener>, wait: Duration) -> bool {
    let Some(l) = listener else {
        tokio::time::sleep(wait).await;
        return true;
    };
    match tokio::time::timeout(wait, l.try_recv()).await {
        Err(_elapsed) => true,
        Ok(Ok(Some(_))) => true,
        Ok(Ok(None)) | Ok(Err(_)) => false,
    }
}

/// A run of failed drains (PostgreSQL or Redis away, the table missing), logged as one event:
/// when it starts, every [`Outage::EVERY`] while it lasts, and when it ends, not once a try.
#[derive(Default)]
struct Outage {
    failures: usize,
    since: Option<Instant>,
    logged: Option<Instant>,
}

impl Outage {
    const EVERY: Duration = Duration::from_secs(30);

    /// Notes a failure; how long to pause before the next try.
    fn failed(&mut self, error: &crate::error::Error) -> Duration {
        let pause = BACKOFF[self.failures.min(BACKOFF.len() - 1)];
        self.failures += 1;
        let since = *self.since.get_or_insert_with(Instant::now);
        if self.logged.is_none_or(|at| at.elapsed() >= Outage::EVERY) {
            self.logged = Some(Instant::now());
            let secs = since.elapsed().as_secs();
            tracing::warn!(%error, failing_for_s = secs, "outbox relay cannot relay; retrying");
        }
        pause
    }

    /// Notes a drain that worked: logs the end of an outage.
    fn ended(&mut self) {
        if let Some(since) = self.since.take() {
            let secs = since.elapsed().as_secs();
            tracing::info!(
                failures = self.failures,
                after_s = secs,
                "outbox relay relays again"
            );
        }
        self.failures = 0;
        self.logged = None;
    }
}

/// Rows moved, for the rate a report gives.
struct Meter {
    total: u64,
    since_report: u64,
    reported: Instant,
}

impl Meter {
    fn new() -> Meter {
        Meter {
            total: 0,
            since_report: 0,
            reported: Instant::now(),
        }
    }

    fn add(&mut self, moved: u64) {
        self.total += moved;
        self.since_report += moved;
    }

    fn due(&self, every: Duration) -> bool {
        self.reported.elapsed() >= every
    }

    /// Rows per second since the last report; starts the next span.
    fn rate(&mut self) -> f64 {
        let secs = self.reported.elapsed().as_secs_f64().max(0.001);
        let rate = self.since_report as f64 / secs;
        self.since_report = 0;
        self.reported = Instant::now();
        rate
    }
}
