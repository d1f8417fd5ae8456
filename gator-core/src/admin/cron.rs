//! The runtime API of periodic entries: add, remove, list, pause, resume and run now, each
//! through [`Admin`] (see the [module docs](super)).

use super::Admin;
use crate::cron::{CronEntry, Source};
use crate::error::{Error, Result};
use crate::job::{Job, PendingJob, encode};
use crate::store;

/// An entry as stored in Redis, with its state.
#[derive(Debug, Clone, PartialEq)]
pub struct Periodic {
    /// The definition.
    pub entry: CronEntry,
    /// Whether it is paused.
    pub paused: bool,
    /// The last tick fired (ms, Redis time); when it was added, if none fired yet.
    pub last_fired: Option<u64>,
    /// Its next tick after Redis's clock now (ms), if it has one.
    pub next: Option<u64>,
}

/// What the fire of one tick did (see [`Admin::run_periodic_now`] for a run-now).
pub use store::cron::Fire;

impl Admin {
    /// Stores periodic entry `name`: `job` (its arguments fixed) enqueued on `cron` (5 or 6
    /// fields) in IANA zone `tz` (UTC if `None`), by whichever worker sees the tick first, once
    /// per tick. Replaces an entry of that name, keeping its last tick and pause; a new entry
    /// fires no tick from before now.
    pub async fn add_periodic<J: Job>(
        &self,
        name: &str,
        cron: &str,
        tz: Option<&str>,
        job: PendingJob<J>,
    ) -> Result<()> {
        let payload = encode(job)?.payload;
        let entry = CronEntry::new(name, cron, tz, payload, Source::Api)?;
        self.publish_periodic(&entry).await
    }

    /// Stores `entry` (what [`Admin::add_periodic`] and a worker's start do): registers its
    /// queue (and as controlled, if its job has flow options), then the entry.
    pub async fn publish_periodic(&self, entry: &CronEntry) -> Result<()> {
        let mut conn = self.connection();
        let keys = self.keys();
        store::queue::register(&mut conn, keys, std::slice::from_ref(&entry.queue)).await?;
        if entry.flow.as_ref().is_some_and(|f| !f.is_empty()) {
            store::flow::register(&mut conn, keys, &[entry.queue.as_str()]).await?;
        }
        store::cron::add(&mut conn, keys, &entry.name, &entry.queue, &entry.to_json()).await?;
        Ok(())
    }

    /// Removes periodic entry `name`; whether there was one. An entry declared in code comes
    /// back when a worker that declares it starts.
    pub async fn remove_periodic(&self, name: &str) -> Result<bool> {
        store::cron::remove(&mut self.connection(), self.keys(), name).await
    }

    /// Every periodic entry stored in Redis, by name, with its state. An entry whose stored
    /// definition cannot be read is left out.
    pub async fn periodic_entries(&self) -> Result<Vec<Periodic>> {
        let now = self.redis_time().await?;
        let stored = store::cron::list(&mut self.connection(), self.keys()).await?;
        Ok(stored
            .into_iter()
            .filter_map(|s| {
                let entry = CronEntry::from_json(&s.definition).ok()?;
                let next = entry.schedule().ok().and_then(|sc| sc.next_after(now));
                Some(Periodic {
                    entry,
                    paused: s.paused_at.is_some(),
                    last_fired: s.fired,
                    next,
                })
            })
            .collect())
    }

    /// Pauses periodic entry `name`: it fires no tick until resumed.
    pub async fn pause_periodic(&self, name: &str) -> Result<()> {
        let queue = self.periodic_queue(name).await?;
        if !store::cron::set_paused(&mut self.connection(), self.keys(), name, &queue, true).await?
        {
            return Err(unknown(name));
        }
        Ok(())
    }

    /// Resumes periodic entry `name`: it fires its next tick (not one missed while paused).
    pub async fn resume_periodic(&self, name: &str) -> Result<()> {
        let queue = self.periodic_queue(name).await?;
        if !store::cron::set_paused(&mut self.connection(), self.keys(), name, &queue, false)
            .await?
        {
            return Err(unknown(name));
        }
        Ok(())
    }

    /// Enqueues periodic entry `name`'s job once now, paused or not; not a tick, so its
    /// schedule is unchanged. Returns the jid.
    pub async fn run_periodic_now(&self, name: &str) -> Result<String> {
        let entry = self
            .periodic_entries()
            .await?
            .into_iter()
            .find(|p| p.entry.name == name)
            .ok_or_else(|| unknown(name))?
            .entry;
        let payload = entry.payload(None, self.redis_time().await?);
        match store::cron::fire(&mut self.connection(), self.keys(), name, None, &payload).await? {
            Fire::Pushed => Ok(payload.jid),
            _ => Err(unknown(name)),
        }
    }

    /// The queue periodic entry `name` lives in.
    async fn periodic_queue(&self, name: &str) -> Result<String> {
        store::cron::queue_of(&mut self.connection(), self.keys(), name)
            .await?
            .ok_or_else(|| unknown(name))
    }
}

fn unknown(name: &str) -> Error {
    Error::UnknownPeriodic {
        name: name.to_owned(),
    }
}
