//! The side keys of jobs stored aside (`payload::aside`): `gator:{<queue>}:payload:<jid>`
//! (STRING), written with the job's push (`store::queue::enqueue`), read by the worker after
//! the fetch and by readers, deleted by the scripts that end the job for good.

use super::fetched::Fetched;
use super::keys::Keys;
use crate::error::Result;
use crate::payload::Payload;
use redis::aio::ConnectionLike;

/// The side key of a job as fetched, if its payload is marked aside
/// ([`crate::payload::aside::marked`]): what a settle script that ends it deletes. `None` for
/// every other job, whose settle is called as before.
pub fn key_of(keys: &Keys, job: &Fetched) -> Option<String> {
    if !crate::payload::aside::marked(&job.raw) {
        return None;
    }
    let jid = super::status::jid_of(&job.raw)?;
    Some(keys.payload(&job.queue, &jid))
}

/// The bytes of job `jid`'s side key on `queue`, if it has one.
pub async fn get(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    queue: &str,
    jid: &str,
) -> Result<Option<Vec<u8>>> {
    Ok(redis::cmd("GET")
        .arg(keys.payload(queue, jid))
        .query_async(conn)
        .await?)
}

/// Fills `payload`, read aside (its arguments `null`, its marker kept), with the arguments of
/// its side key, decoded up to the decode limit (`payload::packed::decode_limit`), for a
/// reader (`Admin`, the API, `job show`); it is written back with its marker. A payload not
/// stored aside is left as it is; a side key gone (the job ended meanwhile) leaves it too.
pub async fn load(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    payload: &mut Payload,
) -> Result<()> {
    if !payload.packing.is_some_and(|p| p.aside) || !payload.args.is_null() {
        return Ok(());
    }
    let Some(bytes) = get(conn, keys, &payload.queue, &payload.jid).await? else {
        return Ok(());
    };
    let max = crate::payload::packed::decode_limit();
    crate::payload::aside::fill(payload, bytes, max).map_err(|e| crate::error::Error::Aside {
        jid: payload.jid.clone(),
        reason: e.to_string(),
    })
}

/// `SET`s of the side keys of the payloads in `split` (each `Some((key, bytes))`) into `pipe`:
/// in the `MULTI` that pushes their jobs.
pub(crate) fn set_all(pipe: &mut redis::Pipeline, sides: &[(String, Vec<u8>)]) {
    for (key, bytes) in sides {
        pipe.cmd("SET").arg(key).arg(bytes).ignore();
    }
}

/// Deletes side keys whose jobs were not stored after all (a failed enqueue). Best effort:
/// the caller reports the enqueue's error.
pub(crate) async fn forget(conn: &mut impl ConnectionLike, sides: &[(String, Vec<u8>)]) {
    if sides.is_empty() {
        return;
    }
    let keys: Vec<&str> = sides.iter().map(|(key, _)| key.as_str()).collect();
    let _ = redis::cmd("DEL").arg(keys).query_async::<()>(conn).await;
}
