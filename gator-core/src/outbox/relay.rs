//! The relay's Redis half: committed rows of the outbox table placed as a dispatch places a
//! job (shard, expiry, time windows, on Redis's clock) and pushed to their queues, each once.
//! A row Redis will never take (not a job, over the limit, a queue whose keys hold what Gator
//! did not write) is [refused](Outcome::Refused) on its own, so it holds back no other; Redis
//! away or full fails the whole call, and the rows wait.

use super::RELAYED_GUARD;
use super::seal::Options;
use crate::client::Client;
use crate::client::engine::Due;
use crate::client::place::{Later, Stage};
use crate::error::{Error, Result};
use crate::expiry::{Deadline, Expiry, OnExpire};
use crate::job::Encoded;
use crate::payload::Payload;
use crate::store::relayed::{self, Push};
use crate::unique::Dispatched;
use std::collections::BTreeMap;
use std::time::Duration;

/// A committed row of the outbox table, as the relay read it.
#[derive(Debug, Clone)]
pub struct Row {
    /// Its payload, as [`super::Sealed::payload`].
    pub payload: String,
    /// Its options, as [`super::Sealed::options`].
    pub options: Option<String>,
}

/// What became of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Its job is on its queue or in its scheduled set now.
    Pushed,
    /// It had been relayed before (its guard was set): nothing was stored again.
    Before,
    /// A unique job whose duplicate holds the lock: nothing stored, as a dispatch would.
    Duplicate(String),
    /// Redis will never take it, for this reason: it belongs in the outbox's dead state.
    Refused(String),
}

/// A row read and placed, ready to push.
struct Ready {
    index: usize,
    payload: Payload,
    later: Option<Later>,
}

/// Relays `rows` through `client`: what became of each, in order. `Err` when Redis is away,
/// full or failing over: nothing is known of the rows, which stay for the next try (a row
/// pushed before the error is found by its guard then).
pub async fn relay(client: &Client, rows: &[Row]) -> Result<Vec<Outcome>> {
    let mut outcomes = vec![Outcome::Pushed; rows.len()];
    let mut ready = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        match read(client, row) {
            Ok((encoded, due)) => ready.push((index, encoded, due)),
            Err(reason) => outcomes[index] = Outcome::Refused(reason),
        }
    }
    let placed = place(client, ready).await?;
    let mut by_queue: BTreeMap<String, Vec<Ready>> = BTreeMap::new();
    for job in placed {
        by_queue
            .entry(job.payload.queue.clone())
            .or_default()
            .push(job);
    }
    for (queue, jobs) in by_queue {
        push_queue(client, &queue, jobs, &mut outcomes).await?;
    }
    Ok(outcomes)
}

/// A row as the job it holds and when it is due; a reason if it is not one.
fn read(client: &Client, row: &Row) -> std::result::Result<(Encoded, Due), String> {
    let payload: Payload = serde_json::from_str(&row.payload)
        .map_err(|e| format!("the payload is not a Gator job: {e}"))?;
    crate::store::keys::validate_stored_queue(&payload.queue).map_err(|e| e.to_string())?;
    crate::payload::limit::check(&payload, client.max_payload()).map_err(|e| e.to_string())?;
    // A row another producer wrote may carry flow options a dispatch would have refused: one
    // such row must not hold back its batch when it is placed.
    if let Some(flow) = &payload.flow {
        flow.validate().map_err(|e| e.to_string())?;
        flow.parsed_windows().map_err(|e| e.to_string())?;
    }
    let options: Options = match &row.options {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("the options are not the outbox's: {e}"))?,
        None => Options::default(),
    };
    let due = match (options.at, options.delay) {
        (Some(ms), _) => Due::At(ms),
        (None, Some(ms)) => Due::In(Duration::from_millis(ms)),
        (None, None) => Due::Now,
    };
    let on_expire = if options.drop {
        OnExpire::Drop
    } else {
        OnExpire::Dead
    };
    let deadline = match (options.expires_at, options.expires_in) {
        (Some(ms), _) => Some(Deadline::At(ms)),
        (None, Some(ms)) => Some(Deadline::In(Duration::from_millis(ms))),
        (None, None) => None,
    };
    let expiry = deadline.map(|deadline| Expiry {
        deadline,
        on_expire,
    });
    let encoded = Encoded {
        payload,
        shard_key: options.shard,
        expiry,
    };
    Ok((encoded, due))
}

/// The rows read, placed on their shards with their deadlines, and given their due times.
async fn place(client: &Client, ready: Vec<(usize, Encoded, Due)>) -> Result<Vec<Ready>> {
    let mut indexes = Vec::with_capacity(ready.len());
    let mut dues = Vec::with_capacity(ready.len());
    let mut jobs = Vec::with_capacity(ready.len());
    for (index, job, due) in ready {
        indexes.push(index);
        dues.push(due);
        jobs.push(job);
    }
    let payloads = client.place_as(jobs, Stage::Relay).await?;
    let mut placed = Vec::with_capacity(payloads.len());
    for ((index, payload), due) in indexes.into_iter().zip(payloads).zip(dues) {
        let later = client.later(&payload, due).await?;
        placed.push(Ready {
            index,
            payload,
            later,
        });
    }
    Ok(placed)
}

/// Pushes the jobs of one queue in their rows' order: runs of plain ones in one script each,
/// a unique one alone with its lock; then waits for the replicas, if the client does.
async fn push_queue(
    client: &Client,
    queue: &str,
    jobs: Vec<Ready>,
    outcomes: &mut [Outcome],
) -> Result<()> {
    let payloads: Vec<Payload> = jobs.iter().map(|j| j.payload.clone()).collect();
    client.register_if_due(&payloads).await?;
    let mut conn = client.connection();
    let mut run: Vec<&Ready> = Vec::new();
    for job in &jobs {
        if job.payload.unique.is_none() {
            run.push(job);
            continue;
        }
        push_run(client, &mut conn, queue, &mut run, outcomes).await?;
        let when = job.later.map(|l| l.when);
        let stored =
            relayed::push_unique(&mut conn, client.keys(), &job.payload, when, RELAYED_GUARD).await;
        outcomes[job.index] = match refusal(stored)? {
            Err(reason) => Outcome::Refused(reason),
            Ok(None) => Outcome::Before,
            Ok(Some(Dispatched::New(_))) => Outcome::Pushed,
            Ok(Some(Dispatched::Duplicate(jid))) => Outcome::Duplicate(jid),
        };
    }
    push_run(client, &mut conn, queue, &mut run, outcomes).await?;
    client.confirm_replicated(&mut conn, [queue]).await
}

/// Pushes a run of plain jobs of `queue` in one script, and empties it.
async fn push_run(
    client: &Client,
    conn: &mut crate::transport::connection::Connection,
    queue: &str,
    run: &mut Vec<&Ready>,
    outcomes: &mut [Outcome],
) -> Result<()> {
    if run.is_empty() {
        return Ok(());
    }
    let pushes: Vec<Push<'_>> = run
        .iter()
        .map(|j| Push {
            payload: &j.payload,
            when: j.later.map(|l| l.when),
        })
        .collect();
    let pushed = relayed::push(conn, client.keys(), queue, &pushes, RELAYED_GUARD).await;
    match refusal(pushed)? {
        Ok(pushed) => {
            for (job, pushed) in run.iter().zip(pushed) {
                outcomes[job.index] = if pushed {
                    Outcome::Pushed
                } else {
                    Outcome::Before
                };
            }
        }
        // One job's refusal must not bury the rest of its run: each again, alone.
        Err(_) if run.len() > 1 => {
            for job in std::mem::take(run) {
                Box::pin(push_run(client, conn, queue, &mut vec![job], outcomes)).await?;
            }
        }
        Err(reason) => {
            for job in run.iter() {
                outcomes[job.index] = Outcome::Refused(reason.clone());
            }
        }
    }
    run.clear();
    Ok(())
}

/// A write's result, its error split in two: refused for what it holds (`Ok(Err(reason))`, the
/// rows go dead), or Redis away, full or failing over (`Err`, they wait).
fn refusal<T>(result: Result<T>) -> Result<std::result::Result<T, String>> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(e) if e.is_broken_data() || is_script_refusal(&e) => Ok(Err(e.to_string())),
        Err(e) => Err(e),
    }
}

/// Whether a script answered `ERR` of its own (a payload it could not read): not Redis away.
fn is_script_refusal(error: &Error) -> bool {
    matches!(error, Error::Redis(e) if e.code() == Some("ERR"))
}
