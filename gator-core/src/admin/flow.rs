//! The flow-control admin API: the settings of a queue, written to Redis for every worker at
//! once, and what its controls look like now. `gator-worker queue ...` and
//! `gator-worker limiter ...` are a thin shell over these [`Admin`] methods.
//!
//! ```no_run
//! use gator_core::{Admin, Client};
//! use std::time::Duration;
//!
//! # async fn demo() -> gator_core::Result<()> {
//! let admin = Admin::new(Client::connect("redis://127.0.0.1:6379").await?);
//! admin.pause_queue("mail").await?;
//! admin.set_queue_limit("partner", Some(10)).await?;
//! admin.set_queue_share("partner", Some("east"), Some(40)).await?;
//! admin.set_queue_rate("mail", None, Some("100/1s".parse()?)).await?;
//! admin.set_queue_aging("mail", Some(Duration::from_secs(30))).await?;
//! let status = admin.flow_status("partner").await?;
//! println!("{} units in use of {:?}", status.units_in_use, status.limit);
//! admin.resume_queue("mail").await?;
//! # Ok(()) }
//! ```
//!
//! Flow control decides per queue slot, so a sharded queue (see [`crate::shards`]), which is
//! several slots, is refused.

use super::Admin;
use crate::error::{Error, Result};
use crate::flow::{FlowSetting, QueueOrdering, RateSpec, Windows};
use crate::store;
use crate::store::flow_status::FlowStatus;
use std::time::Duration;

impl Admin {
    /// Applies `settings` to `queue` in one atomic step, making it controlled. Every worker
    /// obeys them from its next admission on.
    pub async fn set_queue_flow(&self, queue: &str, settings: &[FlowSetting]) -> Result<()> {
        store::keys::validate_queue(queue)?;
        if let Some(count) = self.shard_counts().await?.get(queue).filter(|c| **c > 1) {
            return Err(Error::InvalidFlow {
                reason: format!(
                    "queue {queue:?} is split into {count} shards, and flow control decides per \
                     queue slot: set `gator-worker shards {queue} 1` first"
                ),
            });
        }
        store::flow::set(&mut self.connection(), self.keys(), queue, settings).await
    }

    /// Pauses `queue` for every worker: it keeps accepting jobs, running jobs finish, and no
    /// job starts until [`Admin::resume_queue`].
    pub async fn pause_queue(&self, queue: &str) -> Result<()> {
        self.set_queue_flow(queue, &[FlowSetting::Paused(true)])
            .await
    }

    /// Resumes a paused `queue`: its jobs start again, in order.
    pub async fn resume_queue(&self, queue: &str) -> Result<()> {
        self.set_queue_flow(queue, &[FlowSetting::Paused(false)])
            .await
    }

    /// Sets (or removes, with `None`) `queue`'s concurrency limit, in units over the fleet.
    pub async fn set_queue_limit(&self, queue: &str, units: Option<u32>) -> Result<()> {
        self.set_queue_flow(queue, &[FlowSetting::Limit(units)])
            .await
    }

    /// Sets (or removes, with `None`) the share of limit key `key` (`None`: the default share
    /// of every unlisted key), in percent of the queue's limit.
    pub async fn set_queue_share(
        &self,
        queue: &str,
        key: Option<&str>,
        percent: Option<u8>,
    ) -> Result<()> {
        let setting = FlowSetting::Share {
            key: key.map(str::to_owned),
            percent,
        };
        self.set_queue_flow(queue, &[setting]).await
    }

    /// Sets (or removes, with `None`) the weight of fair key `key` (`None`: the default weight
    /// of every unlisted key, 1 unless set), from 1 to [`crate::flow::MAX_FAIR_WEIGHT`]. Jobs
    /// parked from now on are placed by it.
    pub async fn set_queue_fair_weight(
        &self,
        queue: &str,
        key: Option<&str>,
        weight: Option<u8>,
    ) -> Result<()> {
        let setting = FlowSetting::FairWeight {
            key: key.map(str::to_owned),
            weight,
        };
        self.set_queue_flow(queue, &[setting]).await
    }

    /// Sets (or removes, with `None`) a rate limiter of `queue`: its own (`limiter: None`),
    /// which every job obeys, or a named one, which the jobs that name it obey.
    pub async fn set_queue_rate(
        &self,
        queue: &str,
        limiter: Option<&str>,
        rate: Option<RateSpec>,
    ) -> Result<()> {
        let setting = FlowSetting::Rate {
            name: limiter.map(str::to_owned),
            rate,
        };
        self.set_queue_flow(queue, &[setting]).await
    }

    /// Sets (or turns off, with `None`) aging: a waiting job gains one priority step per
    /// `interval`.
    pub async fn set_queue_aging(&self, queue: &str, interval: Option<Duration>) -> Result<()> {
        self.set_queue_flow(queue, &[FlowSetting::Aging(interval)])
            .await
    }

    /// Sets how `queue` orders the jobs that may start.
    pub async fn set_queue_order(&self, queue: &str, order: QueueOrdering) -> Result<()> {
        self.set_queue_flow(queue, &[FlowSetting::Order(order)])
            .await
    }

    /// Sets (or removes, with `None`) the time windows `queue` starts jobs in.
    pub async fn set_queue_windows(&self, queue: &str, windows: Option<Windows>) -> Result<()> {
        self.set_queue_flow(queue, &[FlowSetting::Windows(windows)])
            .await
    }

    /// `queue`'s flow controls as they stand: paused, limit, units in use by key, shares,
    /// parked jobs by key, rate limiters with their next start, aging, order, windows.
    pub async fn flow_status(&self, queue: &str) -> Result<FlowStatus> {
        store::keys::validate_queue(queue)?;
        store::flow_status::status(&mut self.connection(), self.keys(), queue).await
    }
}
