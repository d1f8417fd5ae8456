//! What a controlled queue's flow controls look like right now ([`status`]): settings, units
//! in use, rate limiters, and parked jobs by parking key. What `gator-worker queue show`, the
//! dashboard's limits page and `Admin::flow_status` show; never what decides.

use super::flow::{ParkingKeys, parking_keys};
use crate::error::Result;
use crate::flow::{QueueOrdering, RateSpec};
use crate::store::keys::Keys;
use redis::aio::ConnectionLike;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// A queue's flow controls as they stand: what `gator-worker queue show` prints.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlowStatus {
    /// The queue.
    pub queue: String,
    /// Whether the queue is controlled at all (a plain queue has nothing else to show).
    pub controlled: bool,
    /// Whether it is paused.
    pub paused: bool,
    /// The concurrency limit in units, if any.
    pub limit: Option<u32>,
    /// Units in use over the fleet.
    pub units_in_use: u64,
    /// Units in use per limit key (the empty key is jobs without one).
    pub units_by_key: BTreeMap<String, u64>,
    /// Shares in percent per limit key.
    pub shares: BTreeMap<String, u8>,
    /// The share of unlisted keys, if set.
    pub default_share: Option<u8>,
    /// Weights per fair key ([`crate::flow::FlowSetting::FairWeight`]).
    pub fair_weights: BTreeMap<String, u8>,
    /// The weight of unlisted fair keys, if set (else 1).
    pub default_fair_weight: Option<u8>,
    /// The fair keys with jobs placed ahead of the queue's virtual time: those still taking
    /// turns (the others start their next job at once, in turn).
    pub fair_keys_waiting: u64,
    /// Jobs parked per limit key, with the state of each parking key.
    pub parked: Vec<Parked>,
    /// Critical jobs waiting.
    pub critical_waiting: u64,
    /// Jobs moved aside when the queue became controlled, not parked yet.
    pub backlog: u64,
    /// The rate limiters: the queue's own (`name` empty) and named ones.
    pub rates: Vec<RateStatus>,
    /// Aging interval, if set.
    #[serde(with = "optional_ms")]
    pub aging: Option<Duration>,
    /// How jobs are ordered.
    pub order: String,
    /// The queue's time windows (`05:00-07:00,22:00-23:00 Europe/Berlin`), if any.
    pub windows: Option<String>,
}

impl FlowStatus {
    /// Every job parked, whatever its key's state: the one figure `gator-worker queues`,
    /// `queue show`, the dashboard and the API call parked.
    pub fn parked_jobs(&self) -> u64 {
        self.parked.iter().map(|p| p.jobs).sum()
    }

    /// The parked jobs whose key may start one now (state `ready`); the rest wait for a
    /// limit, a rate, a share or a no-overlap lock.
    pub fn parked_ready(&self) -> u64 {
        (self.parked.iter())
            .filter(|p| p.state == "ready")
            .map(|p| p.jobs)
            .sum()
    }
}

/// Parked jobs of one parking key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Parked {
    /// The limit key (empty for jobs without one).
    pub key: String,
    /// The rate limiter the jobs name, if any.
    pub rate: Option<String>,
    /// The no-overlap key the jobs share, if any ([`crate::flow::overlap`]).
    pub overlap: Option<String>,
    /// How many jobs wait.
    pub jobs: u64,
    /// `ready`, `blocked` (waiting for its key's share), `timed` (waiting for its limiter) or
    /// `overlap` (waiting for a running job of its overlap key to settle).
    pub state: String,
}

/// One rate limiter's setting and its next allowed start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RateStatus {
    /// Its name; empty for the queue's own.
    pub name: String,
    /// Its rate, as `100/1s`.
    pub rate: String,
    /// The earliest time (ms since the epoch, Redis time) a job may start, if not now.
    pub next_allowed_ms: Option<u64>,
}

mod optional_ms {
    pub fn serialize<S: serde::Serializer>(
        value: &Option<std::time::Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }
}

/// A limiter's status from its stored rate and TAT, at Redis time `now` (ms).
pub(super) fn rate_status(name: String, stored: &str, tat: Option<f64>, now: u64) -> RateStatus {
    let spec = RateSpec::from_stored(stored);
    let next_allowed_ms = match (spec, tat) {
        (Some(spec), Some(tat)) => {
            let step = spec.per.as_millis() as f64 / f64::from(spec.count);
            let at = tat - f64::from(spec.burst.saturating_sub(1)) * step;
            (at > now as f64).then_some(at.ceil() as u64)
        }
        _ => None,
    };
    RateStatus {
        name,
        rate: spec.map_or_else(|| stored.to_owned(), |s| s.to_string()),
        next_allowed_ms,
    }
}

/// Reads `queue`'s flow controls.
pub async fn status(
    conn: &mut crate::transport::connection::Connection,
    keys: &Keys,
    queue: &str,
) -> Result<FlowStatus> {
    let flow: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg(keys.flow(queue))
        .query_async(conn)
        .await?;
    let mut status = FlowStatus {
        queue: queue.to_owned(),
        controlled: !flow.is_empty(),
        order: QueueOrdering::Priority.to_string(),
        ..FlowStatus::default()
    };
    if flow.is_empty() {
        return Ok(status);
    }
    let rate_names = settings(&mut status, &flow);
    // On a cluster TIME goes to any node: the next allowed times shown may be off by the
    // nodes' clock difference (they are for people, not decisions).
    let now = super::server::time(conn).await?;
    for (name, stored) in rate_names {
        let tat: Option<f64> = redis::cmd("GET")
            .arg(keys.tat(queue, &name))
            .query_async(conn)
            .await?;
        status.rates.push(rate_status(name, &stored, tat, now));
    }
    units(conn, keys, queue, &mut status).await?;
    status.parked = parked(conn, keys, queue).await?;
    (
        status.critical_waiting,
        status.backlog,
        status.fair_keys_waiting,
    ) = redis::pipe()
        .zcard(keys.critical(queue))
        .llen(keys.backlog(queue))
        .zcard(keys.fair(queue))
        .query_async(conn)
        .await?;
    Ok(status)
}

/// Fills `status` from the flow hash's fields; the rate limiters it names, with their stored
/// rates.
fn settings(status: &mut FlowStatus, flow: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut rate_names = Vec::new();
    for (field, value) in flow {
        match field.as_str() {
            "paused" => status.paused = value == "1",
            "limit" => status.limit = value.parse().ok(),
            "share_default" => status.default_share = value.parse().ok(),
            "fair_weight_default" => status.default_fair_weight = value.parse().ok(),
            "aging" => status.aging = value.parse().ok().map(Duration::from_millis),
            "order" if value == "due" => status.order = QueueOrdering::Due.to_string(),
            "rate" => rate_names.push((String::new(), value.clone())),
            "windows" => status.windows = Some(value.clone()),
            _ => {
                if let Some(key) = field.strip_prefix("share:") {
                    if let Ok(p) = value.parse() {
                        status.shares.insert(key.to_owned(), p);
                    }
                } else if let Some(key) = field.strip_prefix("fair_weight:") {
                    if let Ok(w) = value.parse() {
                        status.fair_weights.insert(key.to_owned(), w);
                    }
                } else if let Some(name) = field.strip_prefix("rate:") {
                    rate_names.push((name.to_owned(), value.clone()));
                }
            }
        }
    }
    rate_names
}

/// The units in use, in all and per limit key.
async fn units(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    status: &mut FlowStatus,
) -> Result<()> {
    let used: BTreeMap<String, i64> = redis::cmd("HGETALL")
        .arg(keys.used(queue))
        .query_async(conn)
        .await?;
    for (field, units) in used {
        let units = u64::try_from(units).unwrap_or(0);
        if field == "!total" {
            status.units_in_use = units;
        } else if let Some(key) = field.strip_prefix("k:") {
            status.units_by_key.insert(key.to_owned(), units);
        }
    }
    Ok(())
}

/// The jobs parked per parking key, each with its state, sorted by key.
async fn parked(conn: &mut impl ConnectionLike, keys: &Keys, queue: &str) -> Result<Vec<Parked>> {
    let ParkingKeys {
        ready,
        timed,
        blocked,
    } = parking_keys(conn, keys, queue).await?;
    // The overlap keys held now; the parking keys waiting for them.
    let held: Vec<String> = redis::cmd("HKEYS")
        .arg(keys.overlap(queue))
        .query_async(conn)
        .await?;
    let mut waiting = Vec::new();
    for overlap in held {
        let parking_keys: Vec<String> = redis::cmd("SMEMBERS")
            .arg(keys.overlap_wait(queue, &overlap))
            .query_async(conn)
            .await?;
        waiting.extend(parking_keys);
    }
    let mut parked = Vec::new();
    for (state, parking_keys) in [
        ("ready", ready),
        ("blocked", blocked),
        ("timed", timed),
        ("overlap", waiting),
    ] {
        for parking_key in parking_keys {
            let jobs: u64 = redis::cmd("ZCARD")
                .arg(keys.held(queue, &parking_key))
                .query_async(conn)
                .await?;
            parked.push(parked_of(&parking_key, jobs, state));
        }
    }
    parked.sort_by(|a, b| (&a.key, &a.rate, &a.overlap).cmp(&(&b.key, &b.rate, &b.overlap)));
    Ok(parked)
}

/// A parking key's row: its limit key, rate limiter and overlap key, read from its parts.
fn parked_of(parking_key: &str, jobs: u64, state: &str) -> Parked {
    let (rest, overlap) = match parking_key.split_once('\u{1e}') {
        Some((rest, overlap)) => (rest, Some(overlap.to_owned())),
        None => (parking_key, None),
    };
    let (key, rate) = match rest.split_once('\u{1f}') {
        Some((key, rate)) => (key.to_owned(), Some(rate.to_owned())),
        None => (rest.to_owned(), None),
    };
    Parked {
        key,
        rate,
        overlap,
        jobs,
        state: state.to_owned(),
    }
}
