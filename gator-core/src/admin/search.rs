//! Finding jobs by jid, job name, a piece of their arguments or of their error, across waiting,
//! scheduled, retrying and dead jobs, a bounded chunk at a time.
//!
//! # Cost
//! Redis has no index of what is inside a payload, so a search reads entries and matches them
//! here: each call reads at most `budget` entries (5,000 by default), in ranges of 500 (one
//! `LRANGE` or `ZRANGE` each), and returns a cursor to go on from. A search over a million
//! jobs is then 200 calls an operator pages through, never one call that holds Redis or the
//! dashboard for seconds. A jid search is the same scan: a job's queue is not known from its
//! jid (use [`crate::client::Client::job_details`] when the whole jid is known).
//!
//! Arguments stored aside (`payload::aside`) are in a key of their own, up to megabytes: a
//! search of the arguments (`Any`, `Args`) reads at most [`ASIDE_READS`] side keys per call;
//! an aside entry past them is matched by its other fields only.
//!
//! The cursor is a position (which collection, which offset). Jobs that move while one pages
//! (run, retried, promoted) may be seen twice or not at all, as with Redis's own `SCAN`.

use super::Admin;
use crate::error::{Error, Result};
use crate::payload::Payload;
use crate::store::keys::Keys;
use crate::transport::connection::Connection;
use serde::{Deserialize, Serialize};

pub use super::search_terms::{Place, SearchField};

/// Entries read per `LRANGE`/`ZRANGE`.
const RANGE: usize = 500;
/// The deepest offset a cursor may hold: in a minutes' list (`store::later`) a minute's rank
/// times 2^32 plus an index, in any other collection an index past any Redis holds, below
/// where Redis reads an index as negative.
const MAX_OFFSET: usize = 1 << 62;
/// [`SearchQuery::budget`] by default.
pub const DEFAULT_BUDGET: usize = 5000;
/// The most side keys (arguments stored aside, `payload::aside`) one search call reads.
pub const ASIDE_READS: usize = 16;

/// A search: see the module docs for what it costs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchQuery {
    /// What to find (not empty).
    pub text: String,
    /// Where in a job to look for it.
    pub field: SearchField,
    /// Where to look for jobs; empty for all four.
    pub places: Vec<Place>,
    /// Only this queue (and its shards); `None` for every known queue.
    pub queue: Option<String>,
    /// Where the previous page stopped ([`SearchPage::next_cursor`]); `None` to start.
    pub cursor: Option<String>,
    /// The most hits to return.
    pub limit: usize,
    /// The most entries to read in this call.
    pub budget: usize,
}

impl SearchQuery {
    /// A search for `text` anywhere, in every place and queue, 50 hits at most, with the
    /// default budget.
    pub fn new(text: impl Into<String>) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            field: SearchField::Any,
            places: Vec::new(),
            queue: None,
            cursor: None,
            limit: 50,
            budget: DEFAULT_BUDGET,
        }
    }
}

/// A job found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// Where it is.
    pub place: Place,
    /// Its queue.
    pub queue: String,
    /// Its jid (`None` for text that is not a payload).
    pub jid: Option<String>,
    /// Its wire name (empty for text that is not a payload).
    pub job: String,
    /// Its due time (scheduled, retry) or time of death (dead), ms; `None` when waiting.
    pub score_ms: Option<u64>,
    /// Its last error, cut to [`gator_rules::MAX_ERROR_TEXT`] bytes.
    pub error: Option<String>,
    /// Its arguments (`null` for text that is not a payload), cut to a preview if they are
    /// large ([`super::preview::args`]).
    pub args: serde_json::Value,
    /// For text that is not a payload: its start ([`super::preview::text`]); `None` for a
    /// payload, whose fields are above (a payload is served once).
    pub unparsed: Option<String>,
    /// The entry as stored (a parked job's payload, without its parking prefix): for the
    /// caller that acts on it, never serialized.
    #[serde(skip)]
    pub raw: String,
}

/// One page of [`Admin::search`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SearchPage {
    /// The jobs found, in the order read.
    pub hits: Vec<SearchHit>,
    /// Where to go on from, if anything is left to read.
    pub next_cursor: Option<String>,
    /// Entries read by this call.
    pub scanned: usize,
    /// Keys that could not be read (of the wrong type, written by hand), each with the
    /// reason: skipped, and every other one searched.
    pub broken: Vec<String>,
}

/// One list or sorted set searched.
struct Collection {
    place: Place,
    queue: String,
    key: String,
    sorted: bool,
    /// A controlled queue's critical or parking-key set, whose members carry a sequence
    /// prefix before the payload.
    parked: bool,
    /// The index of the minutes' lists of jobs scheduled beyond the horizon
    /// (`store::later`), read through it: a position there is a minute's rank and an index.
    later: bool,
}

impl Admin {
    /// Reads up to `query.budget` entries from where `query.cursor` says, and returns those
    /// that match, up to `query.limit`, with the cursor to go on from.
    pub async fn search(&self, query: &SearchQuery) -> Result<SearchPage> {
        let needle = query.text.trim().to_lowercase();
        if needle.is_empty() {
            return Err(Error::InvalidArgs {
                reason: "a search needs some text".into(),
            });
        }
        let queues = self.target_queues(query.queue.as_deref()).await?;
        let places = if query.places.is_empty() {
            Place::ALL.to_vec()
        } else {
            query.places.clone()
        };
        let mut conn = self.connection();
        let collections = collections(&mut conn, self.keys(), &places, &queues).await?;
        let (mut index, mut offset) = match &query.cursor {
            Some(cursor) => parse_cursor(cursor)?,
            None => (0, 0),
        };
        let (limit, budget) = (query.limit.max(1), query.budget.max(1));
        let mut page = SearchPage::default();
        let mut aside_reads = 0;
        while let Some(collection) = collections.get(index) {
            if page.scanned >= budget || page.hits.len() >= limit {
                page.next_cursor = Some(format!("{index}:{offset}"));
                return Ok(page);
            }
            let count = RANGE.min(budget - page.scanned);
            let entries = match read(&mut conn, collection, offset, count).await {
                Ok(entries) => entries,
                // One key that is not what Gator wrote: the others are still searched.
                Err(e) if e.is_broken_data() => {
                    page.broken.push(format!("{}: {e}", collection.key));
                    (index, offset) = (index + 1, 0);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let read_all = entries.len() < count;
            let reads = (&mut conn, collection, query.field, &mut aside_reads);
            let asides = aside_args(reads, self.keys(), &entries).await;
            for ((raw, score, next), aside) in entries.into_iter().zip(asides) {
                page.scanned += 1;
                offset = next;
                let entry = (raw, score, aside.as_deref());
                if let Some(hit) = matches(collection, entry, &needle, query.field) {
                    page.hits.push(hit);
                    if page.hits.len() >= limit {
                        break;
                    }
                }
            }
            if read_all && page.hits.len() < limit {
                (index, offset) = (index + 1, 0);
            }
        }
        Ok(page)
    }
}

/// What is searched, in a stable order: by place, then queue, then (a controlled queue's
/// parked jobs) parking key.
async fn collections(
    conn: &mut Connection,
    keys: &Keys,
    places: &[Place],
    queues: &[String],
) -> Result<Vec<Collection>> {
    let controlled = crate::store::flow::controlled(conn, keys).await?;
    let mut collections = Vec::new();
    for &place in Place::ALL.iter().filter(|p| places.contains(p)) {
        for queue in queues {
            let mut add = |key: String, sorted: bool, parked: bool| {
                collections.push(Collection {
                    place,
                    queue: queue.clone(),
                    key,
                    sorted,
                    parked,
                    later: false,
                })
            };
            match place {
                Place::Queued if controlled.contains(queue) => {
                    add(keys.backlog(queue), false, false);
                    add(keys.critical(queue), true, true);
                    // Parking keys that cannot be read (a broken flow key) are not searched; the
                    // queue's row in `queue_infos` says why.
                    let mut parking: Vec<String> =
                        match crate::store::flow::parking_keys(conn, keys, queue).await {
                            Ok(parking) => parking.all().cloned().collect(),
                            Err(e) if e.is_broken_data() => Vec::new(),
                            Err(e) => return Err(e),
                        };
                    parking.sort();
                    parking.dedup();
                    for parking_key in parking {
                        add(keys.held(queue, &parking_key), true, true);
                    }
                }
                Place::Queued => add(keys.queue(queue), false, false),
                Place::Scheduled => {
                    add(keys.scheduled(queue), true, false);
                    collections.push(Collection {
                        place,
                        queue: queue.clone(),
                        key: keys.later(queue),
                        sorted: true,
                        parked: false,
                        later: true,
                    });
                }
                Place::Retry => add(keys.retry(queue), true, false),
                Place::Dead => add(keys.dead(queue), true, false),
            }
        }
    }
    Ok(collections)
}

/// Up to `count` entries of `collection` from `offset`, with their scores if it is sorted (a
/// job of a minute's list: its due time), each with the offset after it.
async fn read(
    conn: &mut Connection,
    collection: &Collection,
    offset: usize,
    count: usize,
) -> Result<Vec<(String, Option<f64>, usize)>> {
    if collection.later {
        let rows = crate::store::later::range(conn, &collection.key, offset as u64, count).await?;
        let rows = rows.into_iter();
        return Ok(rows
            .map(|(raw, due, next)| (raw, Some(due as f64), next as usize))
            .collect());
    }
    let rows = crate::store::sets::range(conn, &collection.key, collection.sorted, offset, count);
    let rows = rows.await?.into_iter().enumerate();
    Ok(rows
        .map(|(i, (raw, score))| (raw, score, offset + i + 1))
        .collect())
}

/// For each of `entries`, the arguments' JSON text of one stored aside (`payload::aside`),
/// read from its side key for a search of the arguments while fewer than [`ASIDE_READS`]
/// were read (`reads` counts them); `None` for every other entry.
async fn aside_args(
    (conn, collection, field, reads): (&mut Connection, &Collection, SearchField, &mut usize),
    keys: &Keys,
    entries: &[(String, Option<f64>, usize)],
) -> Vec<Option<String>> {
    let mut found = Vec::with_capacity(entries.len());
    for (raw, _, _) in entries {
        let text = if collection.parked {
            crate::store::flow::parked_payload(raw)
        } else {
            raw.as_str()
        };
        let wanted = matches!(field, SearchField::Any | SearchField::Args)
            && *reads < ASIDE_READS
            && crate::payload::aside::marked(text.as_bytes());
        let payload = wanted.then(|| Payload::from_json(text).ok()).flatten();
        let Some(mut payload) = payload else {
            found.push(None);
            continue;
        };
        *reads += 1;
        let loaded = crate::store::aside::load(conn, keys, &mut payload).await;
        found.push(loaded.ok().map(|()| payload.args.to_string()));
    }
    found
}

/// The hit an entry (its text, its score, its arguments if read aside) makes, if it matches.
fn matches(
    collection: &Collection,
    (raw, score, aside): (String, Option<f64>, Option<&str>),
    needle: &str,
    field: SearchField,
) -> Option<SearchHit> {
    let contains = |text: &str| text.to_lowercase().contains(needle);
    // The cheap test first: a needle that is nowhere in the entry is in none of its fields,
    // unless its arguments are packed (compressed: crate::payload::packed).
    let packed = raw.contains(r#""packed":{"#);
    if !contains(&raw) && field != SearchField::Args && !packed {
        return None;
    }
    let text = if collection.parked {
        crate::store::flow::parked_payload(&raw)
    } else {
        &raw
    };
    let payload = Payload::from_json(text).ok();
    let found = match (&payload, field) {
        (Some(p), SearchField::Any) if packed => {
            contains(text) || contains(&p.args.to_string()) || aside.is_some_and(contains)
        }
        (_, SearchField::Any) => true,
        (None, SearchField::Args) => contains(text),
        (None, _) => false,
        (Some(p), SearchField::Jid) => p.jid.to_lowercase().starts_with(needle),
        (Some(p), SearchField::Job) => contains(&p.job),
        (Some(p), SearchField::Args) => {
            contains(&p.args.to_string()) || aside.is_some_and(contains)
        }
        (Some(p), SearchField::Error) => p.error.as_deref().is_some_and(contains),
    };
    let mut hit = found.then(|| hit(collection, text, score, payload))?;
    if let Some(args) = aside.and_then(|a| serde_json::from_str(a).ok()) {
        hit.args = super::preview::args(args);
    }
    Some(hit)
}

/// The hit of entry `text` of `collection`, parsed as `payload` if it is one. (A dead entry of
/// text that was not a payload carries it in `raw`: shown as unparsed text.)
fn hit(
    collection: &Collection,
    text: &str,
    score: Option<f64>,
    payload: Option<Payload>,
) -> SearchHit {
    let score_ms = match collection.place {
        Place::Queued => None,
        _ => score.map(|s| s.max(0.0) as u64),
    };
    let mut hit = SearchHit {
        place: collection.place,
        queue: collection.queue.clone(),
        jid: None,
        job: String::new(),
        score_ms,
        error: None,
        args: serde_json::Value::Null,
        unparsed: None,
        raw: text.to_owned(),
    };
    match payload {
        Some(p) => {
            hit.jid = Some(p.jid);
            hit.job = p.job;
            hit.error = p.error.as_deref().map(super::preview::error);
            hit.args = super::preview::args(p.args);
        }
        None => hit.unparsed = Some(super::preview::text(text)),
    }
    hit
}

fn parse_cursor(cursor: &str) -> Result<(usize, usize)> {
    cursor
        .split_once(':')
        .and_then(|(i, o)| Some((i.parse().ok()?, o.parse().ok()?)))
        // An offset no list reaches: Redis reads an index past i64's range as negative.
        .filter(|&(_, offset): &(usize, usize)| offset <= MAX_OFFSET)
        .ok_or_else(|| Error::InvalidArgs {
            reason: format!(
                "invalid search cursor {cursor:?}: pass the next_cursor of the page before"
            ),
        })
}
