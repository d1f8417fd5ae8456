//! A job sealed for the outbox: encoded with its options, through the client middleware and
//! held to the payload limit, as a dispatch would be, but stored nowhere yet. Its due time and
//! a relative expiry are kept beside it, to count on Redis's clock when it is relayed.

use crate::client::engine::Due;
use crate::client::{Client, Via, current_default, default_chain};
use crate::error::Result;
use crate::expiry::{Deadline, OnExpire};
use crate::job::{Job, PendingJob, encode};
use crate::payload::limit::{DEFAULT_MAX_PAYLOAD, check};
use serde::{Deserialize, Serialize};

/// A job ready for the outbox table: what a row holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    /// Its jid: what the dispatch returns, and what the relay's guard is keyed by.
    pub jid: String,
    /// Its queue.
    pub queue: String,
    /// Its job's name.
    pub job: String,
    /// Its payload, as JSON (the wire format's, `docs/wire-format.md`).
    pub payload: String,
    /// What is decided when it is relayed (its due time, shard key, a relative expiry), as a
    /// JSON object; `None` for a job due now with none of them.
    pub options: Option<String>,
}

/// The options of a sealed job that are decided when it is relayed (the `options` column).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Options {
    /// Due at this time, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) at: Option<u64>,
    /// Due this many ms after Redis takes it.
    #[serde(default, rename = "in", skip_serializing_if = "Option::is_none")]
    pub(crate) delay: Option<u64>,
    /// Its shard key, if its queue is sharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shard: Option<String>,
    /// It expires this many ms after Redis takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_in: Option<u64>,
    /// It expires at this time, ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    /// Dropped rather than kept as dead past its expiry.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) drop: bool,
}

/// Seals `job`: encoded with every option it was built with, through the middleware of the
/// client it names (`.through(&client)`), or else of the default client if one is set, and
/// held to that client's payload limit. Never talks to Redis.
pub fn seal<J: Job, C: Via>(mut job: PendingJob<J, C>) -> Result<Sealed> {
    let due = Due::of(job.take_timing())?;
    let (job, via) = job.swap_client(());
    let client: Option<Client> = via.client().cloned().or_else(current_default);
    let mut encoded = encode(job)?;
    match &client {
        Some(client) => client.middleware().apply(&mut encoded.payload)?,
        None => default_chain().apply(&mut encoded.payload)?,
    }
    let max = client
        .as_ref()
        .map_or(DEFAULT_MAX_PAYLOAD, Client::max_payload);
    check(&encoded.payload, max)?;
    let mut options = Options {
        shard: encoded.shard_key.take(),
        ..Options::default()
    };
    match due {
        Due::Now => {}
        Due::At(ms) => options.at = Some(ms),
        Due::In(delay) => options.delay = Some(gator_rules::millis(delay)),
    }
    if let Some(expiry) = encoded.expiry {
        match expiry.deadline {
            Deadline::In(delay) => options.expires_in = Some(gator_rules::millis(delay)),
            Deadline::At(ms) => options.expires_at = Some(ms),
        }
        options.drop = expiry.on_expire == OnExpire::Drop;
    }
    let plain = options.at.is_none()
        && options.delay.is_none()
        && options.shard.is_none()
        && options.expires_in.is_none()
        && options.expires_at.is_none();
    let payload = encoded.payload;
    Ok(Sealed {
        options: (!plain)
            .then(|| serde_json::to_string(&options))
            .transpose()?,
        jid: payload.jid.clone(),
        queue: payload.queue.clone(),
        job: payload.job.clone(),
        payload: payload.to_json(),
    })
}
