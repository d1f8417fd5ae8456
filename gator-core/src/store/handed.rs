//! The guarded push every hand-off ends in: a payload onto the queue it names, once
//! (`chain_push.lua`, guarded by `gator:{<queue>}:handed:<guard>`). Chains, workflows and
//! replies each finish a hand-off here, so none of them needs another's room.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use crate::transport::connection::Connection;
use crate::transport::replication::ReplicaWait;

/// How long the guard that makes a hand-off idempotent is kept: far longer than any outbox
/// record waits for its drain.
pub const HANDED_GUARD: std::time::Duration = std::time::Duration::from_secs(3600);

/// Pushes `payload` to the queue it names, once (`chain_push.lua`, guarded by
/// `gator:{<queue>}:handed:<guard>`), first adding the queue to the known set when `register`,
/// and with `wait` once a replica has it: how a released workflow step or a reply's handler
/// reaches its queue. Returns false if the payload names no valid queue (it is left where it
/// is, for a person to see, rather than dropped).
pub async fn push_once(
    conn: &mut Connection,
    keys: &Keys,
    payload: &str,
    guard: &str,
    register: bool,
    wait: Option<&ReplicaWait>,
) -> Result<bool> {
    #[derive(serde::Deserialize)]
    struct Queue {
        queue: String,
    }
    let Some(queue) = serde_json::from_str::<Queue>(payload)
        .ok()
        .map(|q| q.queue)
        .filter(|q| super::keys::validate_stored_queue(q).is_ok())
    else {
        return Ok(false);
    };
    if register {
        super::queue::register(conn, keys, std::slice::from_ref(&queue)).await?;
    }
    scripts::CHAIN_PUSH
        .key(keys.handed(&queue, guard))
        .key(keys.queue(&queue))
        .arg(payload)
        .arg(super::lease::millis(HANDED_GUARD))
        .invoke_async::<i64>(conn)
        .await?;
    if let Some(wait) = wait {
        super::replicas::confirm(conn, wait, vec![keys.queue(&queue)]).await?;
    }
    Ok(true)
}
