//! The transactional outbox as Redis sees it: what each relay last reported of itself
//! ([`crate::outbox::Report`]), for the dashboard's overview, `GET /api/outbox` and
//! `gator-worker outbox`, none of which has a database connection.

use super::Admin;
use crate::error::Result;
use crate::outbox::{Report, reports};

impl Admin {
    /// The reports of the outbox relays that wrote in the last minute, sorted by relay id;
    /// empty when no relay runs. Older ones are dropped from Redis as they are read
    /// ([`crate::outbox::reports`]).
    pub async fn outbox_reports(&self) -> Result<Vec<Report>> {
        let mut found = reports(self.client()).await?;
        found.sort_by(|a, b| a.relay.cmp(&b.relay));
        Ok(found)
    }
}
