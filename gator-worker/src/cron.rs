//! The cron loop: enqueues periodic jobs at their ticks (see [`gator_core::cron`]).
//!
//! Every worker runs one. Each pass:
//! 1. publishes the entries declared in code (`#[job(cron = ...)]`) until that has worked once
//!    (idempotent: an entry keeps its last tick and its pause);
//! 2. reads every entry, then Redis's clock (no entries: the pass ends here);
//! 3. for each entry not paused whose latest tick at or before Redis's clock is newer than its
//!    last fired tick, asks `cron_fire.lua` to fire that tick. Every worker may ask; the script
//!    pushes once per tick. Only the latest tick is ever asked for, so a worker that comes back
//!    after downtime fires a missed tick once, never a burst of them.
//!
//! It then sleeps until the next tick of any entry, as measured on Redis's clock (the local
//! clock only times the sleep), but never longer than [`Cron::refresh`], so that entries added
//! or changed elsewhere are picked up.

use crate::door::{StoredEntry, Upkeep};
use gator_core::Client;
use gator_core::admin::Fire;
use gator_core::cron::CronEntry;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// The longest sleep between passes, in poll intervals (5 s by default): a worker reads the
/// entries at least this often, one `HGETALL`, one `MULTI` per queue with entries and one
/// `TIME`; a fleet without entries pays one `HGETALL` per worker per pass.
pub const REFRESH_POLLS: u32 = 5;

/// Enqueues periodic jobs at their ticks.
pub struct Cron {
    /// Where the entries live.
    pub client: Client,
    /// The entries this binary declares in code, published at start.
    pub declared: Vec<CronEntry>,
    /// The longest sleep between passes: how soon an entry added or changed elsewhere is seen.
    pub refresh: Duration,
    /// How this process logs a Redis outage ([`crate::outage`]).
    pub outage: std::sync::Arc<crate::outage::Outage>,
}

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pass {
    /// Jobs this worker enqueued (ticks it fired first).
    pub fired: usize,
    /// Entries seen.
    pub entries: usize,
    /// How long until the next tick of any entry not paused, on Redis's clock.
    pub next_in: Option<Duration>,
}

impl Cron {
    /// Runs passes until `stop` is cancelled.
    pub async fn run(mut self, stop: CancellationToken) {
        loop {
            let pause = match self.tick().await {
                Ok(pass) => pass
                    .next_in
                    .map_or(self.refresh, |next| next.min(self.refresh)),
                Err(e) => {
                    self.outage.unless_outage(&e, || {
                        warn!(error = %e, "could not fire periodic jobs; trying again next pass");
                    });
                    self.refresh
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stop.cancelled() => return,
            }
        }
    }

    /// One pass: publish the declared entries (once), then fire each entry's latest tick if it
    /// is newer than the last one fired. An entry whose definition cannot be read or whose
    /// fire fails is logged and skipped; the others still fire.
    pub async fn tick(&mut self) -> gator_core::Result<Pass> {
        if !self.declared.is_empty() {
            for entry in &self.declared {
                gator_core::Admin::new(self.client.clone())
                    .publish_periodic(entry)
                    .await?;
            }
            info!(
                entries = self.declared.len(),
                "published the periodic jobs declared in code"
            );
            self.declared.clear();
        }
        let mut upkeep = crate::door::upkeep(&self.client);
        let stored = upkeep.cron_entries().await?;
        if stored.is_empty() {
            // No entries: a worker of a fleet without periodic jobs pays one HGETALL a pass.
            return Ok(Pass::default());
        }
        // Read after the entries: a tick is never computed from a time before they were read.
        let now = self.client.redis_time().await?;
        let mut pass = Pass {
            entries: stored.len(),
            ..Pass::default()
        };
        for stored in &stored {
            self.fire(&mut upkeep, stored, now, &mut pass).await;
        }
        Ok(pass)
    }

    /// Step 3 for one entry: counts its next tick into `pass`, and fires its latest tick if it
    /// is newer than the last one fired. An entry that cannot be read or whose fire fails is
    /// logged and skipped.
    async fn fire(&self, upkeep: &mut Upkeep<'_>, stored: &StoredEntry, now: u64, pass: &mut Pass) {
        let name = stored.name.as_str();
        let schedule = match CronEntry::from_json(&stored.definition)
            .map_err(gator_core::Error::from)
            .and_then(|entry| Ok((entry.schedule()?, entry)))
        {
            Ok(found) => found,
            Err(e) => {
                warn!(entry = name, error = %e, "a periodic entry cannot be read; skipped");
                return;
            }
        };
        let (schedule, entry) = schedule;
        if stored.paused_at.is_some() {
            return;
        }
        if let Some(next) = schedule.next_after(now) {
            let wait = Duration::from_millis(next.saturating_sub(now));
            pass.next_in = Some(pass.next_in.map_or(wait, |w| w.min(wait)));
        }
        let Some(tick) = schedule.latest_at_or_before(now) else {
            return;
        };
        if stored.fired.is_some_and(|fired| tick <= fired) {
            return;
        }
        let payload = entry.payload(Some(tick), now);
        match upkeep.fire_cron(name, Some(tick), &payload).await {
            Ok(Fire::Pushed) => {
                pass.fired += 1;
                debug!(entry = name, tick, jid = %payload.jid, queue = %payload.queue, "enqueued a periodic job");
            }
            Ok(outcome) => {
                debug!(entry = name, tick, ?outcome, "tick not fired here");
            }
            Err(e) => {
                warn!(entry = name, tick, error = %e, "could not fire a periodic job; trying again next pass");
            }
        }
    }
}
