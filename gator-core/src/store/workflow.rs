//! Workflows in Redis. A workflow's state is one hash under the hash tag of its home queue (its
//! first step's), with a push hash of the steps released and not yet on their queues, and the
//! home queue's set of workflows with steps to push (`lua/wf_lib.lua` lists the fields).
//!
//! Every step runs on its own queue, which may live under another tag, on another cluster
//! node. So no script touches both: a step's end is recorded in its own queue's outbox, in the
//! script that settles it (`ack.lua`, `kill.lua`), and [`report`] carries it to the home slot
//! (`wf_report.lua`, idempotent by jid); released children are then pushed to their queues one
//! by one ([`push_pending`]: `chain_push.lua`, guarded against a second push, then
//! `wf_pushed.lua`). A crash between any two of these leaves a record in the outbox or an entry
//! in the push hash, and recovery finishes the move ([`super::chain::drain_outbox`],
//! [`drain_pushing`]).

use crate::error::{Error, Result};
use crate::payload::Payload;
use crate::store::keys::Keys;
use crate::store::scripts;
use crate::transport::connection::Connection;
use crate::transport::replication::ReplicaWait;
use redis::aio::ConnectionLike;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::collections::HashMap;

/// How a step's end is told to its workflow: the record its settle appends to its queue's
/// outbox, which [`report`] carries to the workflow's home slot.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    /// The workflow id, `<uuid>@<home>`.
    pub wf: String,
    /// The step's jid.
    pub jid: String,
    /// `done` or `dead`.
    pub end: String,
    /// What it returned (JSON), if it succeeded with a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Box<RawValue>>,
    /// How long (ms) the workflow is kept once it has finished.
    pub ret: u64,
}

impl Report {
    /// The record as stored in the outbox.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a report always serializes")
    }
}

/// One step of a workflow being stored: its payload, placed on its queue's shard, and its
/// place in the graph.
#[derive(Debug)]
pub struct NewStep {
    /// The step's payload, its workflow link filled in.
    pub payload: Payload,
    /// The step's record (JSON: job, queue, parents, policy).
    pub record: String,
    /// The jids of the steps that run after it.
    pub children: Vec<String>,
}

/// The three keys every workflow script takes, for workflow `id` (`<uuid>@<home>`).
fn script_keys(keys: &Keys, id: &str) -> Result<[String; 3]> {
    let (uuid, home) = split_id(id)?;
    Ok([
        keys.workflow(home, uuid),
        keys.workflow_push(home, uuid),
        keys.workflows_pushing(home),
    ])
}

/// `(uuid, home)` of a workflow id; an error for an id Gator could not have made.
pub fn split_id(id: &str) -> Result<(&str, &str)> {
    match id.split_once('@') {
        Some((uuid, home))
            if !uuid.is_empty()
                && !uuid.contains(['{', '}'])
                && super::keys::validate_stored_queue(home).is_ok() =>
        {
            Ok((uuid, home))
        }
        _ => Err(Error::InvalidWorkflowId { id: id.to_owned() }),
    }
}

/// Stores workflow `id` whole (`wf_create.lua`: its queues go in the known set first, a
/// global key), then pushes its first steps to their queues. If this process dies before the
/// push, the steps wait in the push hash and recovery pushes them.
pub async fn create(
    conn: &mut Connection,
    keys: &Keys,
    id: &str,
    steps: &[NewStep],
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    let queues: Vec<String> = steps.iter().map(|s| s.payload.queue.clone()).collect();
    super::queue::register(conn, keys, &queues).await?;
    let (uuid, home) = split_id(id)?;
    let (kind, now) = (
        super::journeys::JourneyKind::Workflow,
        crate::payload::now_ms(),
    );
    super::journeys::add(conn, keys, kind, home, uuid, now).await?;
    let [wf, push, pushing] = script_keys(keys, id)?;
    let mut invocation = scripts::WF_CREATE.key(wf);
    invocation.key(push).key(pushing).arg(id).arg(steps.len());
    for step in steps {
        let parents = step
            .payload
            .workflow
            .as_ref()
            .map_or(0, |link| link.parents.len());
        let children = if step.children.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&step.children)?
        };
        invocation
            .arg(&step.payload.jid)
            .arg(&step.record)
            .arg(children)
            .arg(parents)
            .arg(step.payload.to_json());
    }
    let released: Vec<(String, String)> = invocation.invoke_async(conn).await?;
    push_released(conn, keys, id, released, wait).await
}

/// Adds `step` to workflow `id`, after the steps `parents` (`wf_add.lua`), and pushes it to its
/// queue at once if they have all succeeded.
pub async fn add(
    conn: &mut Connection,
    keys: &Keys,
    id: &str,
    step: &NewStep,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    super::queue::register(conn, keys, std::slice::from_ref(&step.payload.queue)).await?;
    let [wf, push, pushing] = script_keys(keys, id)?;
    let parents = step
        .payload
        .workflow
        .as_ref()
        .map(|link| link.parents.clone())
        .unwrap_or_default();
    let released: Vec<(String, String)> = scripts::WF_ADD
        .key(wf)
        .key(push)
        .key(pushing)
        .arg(id)
        .arg(&step.payload.jid)
        .arg(&step.record)
        .arg(serde_json::to_string(&parents)?)
        .arg(step.payload.to_json())
        .invoke_async(conn)
        .await?;
    push_released(conn, keys, id, released, wait).await
}

/// Records the end of a step in its workflow (`wf_report.lua`), then pushes the children it
/// released. Running it again (after a crash, or twice at once) changes nothing more.
pub async fn report(
    conn: &mut Connection,
    keys: &Keys,
    report: &Report,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    let [wf, push, pushing] = script_keys(keys, &report.wf)?;
    let released: Vec<(String, String)> = scripts::WF_REPORT
        .key(wf)
        .key(push)
        .key(pushing)
        .arg(&report.wf)
        .arg(&report.jid)
        .arg(&report.end)
        .arg(report.result.as_ref().map_or("", |r| r.get()))
        .arg(report.ret)
        .invoke_async(conn)
        .await?;
    push_released(conn, keys, &report.wf, released, wait).await
}

/// Pushes every released step of workflow `id` to its queue (what its push hash holds).
pub async fn push_pending(
    conn: &mut Connection,
    keys: &Keys,
    id: &str,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    let [_, push_key, _] = script_keys(keys, id)?;
    let released: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(&push_key)
        .query_async(conn)
        .await?;
    push_released(conn, keys, id, released, wait).await
}

/// Pushes `released` steps (jid, payload) of workflow `id` to their queues: `chain_push.lua` in
/// the step's queue's slot (a no-op if pushed before), then, once it is there (and on the
/// replicas, with `wait`), `wf_pushed.lua` in the home slot takes it out of the push hash.
async fn push_released(
    conn: &mut Connection,
    keys: &Keys,
    id: &str,
    released: Vec<(String, String)>,
    wait: Option<&ReplicaWait>,
) -> Result<()> {
    if released.is_empty() {
        return Ok(());
    }
    let [_, push, pushing] = script_keys(keys, id)?;
    for (jid, payload) in released {
        // The steps' queues were registered when the workflow was stored.
        if !super::chain::push_once(conn, keys, &payload, &jid, false, wait).await? {
            continue;
        }
        scripts::WF_PUSHED
            .key(&push)
            .key(&pushing)
            .arg(id)
            .arg(&jid)
            .invoke_async::<i64>(conn)
            .await?;
    }
    Ok(())
}

/// Pushes the released steps of every workflow homed on `queue` that has some (those a crash
/// left behind); returns how many workflows it looked at.
pub async fn drain_pushing(
    conn: &mut Connection,
    keys: &Keys,
    queue: &str,
    wait: Option<&ReplicaWait>,
) -> Result<usize> {
    let ids: Vec<String> = redis::cmd("SRANDMEMBER")
        .arg(keys.workflows_pushing(queue))
        .arg(100)
        .query_async(conn)
        .await?;
    for id in &ids {
        if split_id(id).is_ok() {
            push_pending(conn, keys, id, wait).await?;
        } else {
            // Not an id Gator wrote: nothing to push for it.
            redis::cmd("SREM")
                .arg(keys.workflows_pushing(queue))
                .arg(id)
                .query_async::<()>(conn)
                .await?;
        }
    }
    Ok(ids.len())
}

/// Cancels workflow `id` (`wf_cancel.lua`): its waiting and unpushed steps; returns its steps
/// already on their queues, `(jid, queue)`, for the caller to cancel one by one.
pub async fn cancel(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    id: &str,
    retention: std::time::Duration,
) -> Result<Vec<(String, String)>> {
    let [wf, push, pushing] = script_keys(keys, id)?;
    Ok(scripts::WF_CANCEL
        .key(wf)
        .key(push)
        .key(pushing)
        .arg(id)
        .arg(super::status::retention_ms(retention))
        .invoke_async(conn)
        .await?)
}

/// Everything workflow `id`'s hash holds (empty if it is unknown or expired).
pub async fn read(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    id: &str,
) -> Result<HashMap<String, String>> {
    let [wf, _, _] = script_keys(keys, id)?;
    Ok(redis::cmd("HGETALL").arg(wf).query_async(conn).await?)
}

/// The records and results of `parents` of workflow `id`, in order: `(record, result)`.
pub async fn parents(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    id: &str,
    parents: &[String],
) -> Result<Vec<(Option<String>, Option<String>)>> {
    if parents.is_empty() {
        return Ok(Vec::new());
    }
    let [wf, _, _] = script_keys(keys, id)?;
    let mut cmd = redis::cmd("HMGET");
    cmd.arg(wf);
    for jid in parents {
        cmd.arg(format!("s:{jid}")).arg(format!("r:{jid}"));
    }
    let values: Vec<Option<String>> = cmd.query_async(conn).await?;
    let mut values = values.into_iter();
    let mut out = Vec::with_capacity(parents.len());
    while let (Some(record), Some(result)) = (values.next(), values.next()) {
        out.push((record, result));
    }
    Ok(out)
}
