//! Answering a job that waits for a reply ([`crate::reply`]), and the replies' statistics.

use super::Client;
use crate::error::Result;
use crate::reply::{DEFAULT_LOOKBACK, Delivery, ReplyStats, validate_key};
use crate::store;
use serde::Serialize;
use std::time::Duration;

impl Client {
    /// Answers the job waiting for `key` with `reply` (serialized as JSON): it goes on with it.
    /// A reply that comes before the job waits is kept for [`DEFAULT_LOOKBACK`] (10 min) and
    /// matched when it does. The first reply to a key wins: later ones within the lookback are
    /// dropped, counted, and answered [`Delivery::Duplicate`].
    pub async fn reply<T: Serialize + ?Sized>(&self, key: &str, reply: &T) -> Result<Delivery> {
        self.reply_within(key, reply, DEFAULT_LOOKBACK).await
    }

    /// [`Client::reply`] with its own lookback window: how long it is kept if no job waits for
    /// it yet, and how long later replies to `key` count as duplicates.
    pub async fn reply_within<T: Serialize + ?Sized>(
        &self,
        key: &str,
        reply: &T,
        lookback: Duration,
    ) -> Result<Delivery> {
        validate_key(key)?;
        let json = serde_json::to_string(reply)?;
        let mut conn = self.connection();
        let delivery = store::reply::reply(&mut conn, self.keys(), key, &json, lookback).await?;
        if delivery == Delivery::Delivered {
            // The waiting job goes on from here; if this process dies first, a worker's next
            // recovery pass does it.
            store::handoff::drain_replies(&mut conn, self.keys(), self.replica_wait()).await?;
        }
        Ok(delivery)
    }

    /// The counters of replies: delivered, kept, duplicates, waits timed out.
    pub async fn reply_stats(&self) -> Result<ReplyStats> {
        let [delivered, kept, duplicates, timeouts] =
            store::reply::stats(&mut self.connection(), self.keys()).await?;
        Ok(ReplyStats {
            delivered,
            kept,
            duplicates,
            timeouts,
        })
    }
}
