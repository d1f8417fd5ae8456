//! The job catalogue in Redis (see `catalogue`): `gator:{catalogue}:jobs` (name →
//! definition), `…:writers` (name → the writer lease), `…:runners:<name>` (worker → its runner
//! lease and queues), all under one hash tag, so each script is in one slot of a cluster.

use crate::error::Result;
use crate::store::keys::Keys;
use crate::store::scripts;
use redis::aio::ConnectionLike;

/// What `publish` heard back.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Published {
    /// `(name, holder)`: names whose definition another worker holds, and that differs.
    pub differs: Vec<(String, String)>,
    /// Names refused because the catalogue is full.
    pub full: Vec<String>,
}

/// One known job as read from Redis, its definition not yet parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredJob {
    /// The job's wire name.
    pub name: String,
    /// Its definition (JSON, `catalogue::Definition`).
    pub definition: String,
    /// The worker holding (or that last held) the writer lease.
    pub writer: String,
    /// When that lease ends or ended (ms, Redis time).
    pub lease_end: u64,
    /// The live workers that run it, each with the queues it serves.
    pub runners: Vec<(String, Vec<String>)>,
    /// Redis's clock when this was read (ms).
    pub now: u64,
}

/// Publishes `jobs` (name, definition) for `worker`, which serves `queues`, and renews its
/// leases on them for `lease_ms` (`catalogue_publish.lua`).
pub async fn publish(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    worker: &str,
    lease_ms: u64,
    queues: &[String],
    max_jobs: usize,
    jobs: &[(String, String)],
) -> Result<Published> {
    let mut call = scripts::CATALOGUE_PUBLISH.key(keys.catalogue_jobs());
    call.key(keys.catalogue_writers())
        .key(keys.catalogue_runners_prefix())
        .arg(worker)
        .arg(lease_ms)
        .arg(queues.join(","))
        .arg(max_jobs);
    for (name, definition) in jobs {
        call.arg(name).arg(definition);
    }
    let (differs, full): (Vec<String>, Vec<String>) = call
        .invoke_async(conn)
        .await
        .map_err(super::broken::of_script)?;
    let differs = differs
        .into_iter()
        .filter_map(|d| d.split_once(' ').map(|(n, h)| (n.to_owned(), h.to_owned())))
        .collect();
    Ok(Published { differs, full })
}

/// Gives up `worker`'s leases on `names` (`catalogue_withdraw.lua`).
pub async fn withdraw(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    worker: &str,
    names: &[String],
) -> Result<()> {
    let mut call = scripts::CATALOGUE_WITHDRAW.key(keys.catalogue_writers());
    call.key(keys.catalogue_runners_prefix()).arg(worker);
    for name in names {
        call.arg(name);
    }
    call.invoke_async::<u64>(conn)
        .await
        .map_err(super::broken::of_script)?;
    Ok(())
}

type Row = (String, String, String, u64, Vec<String>);

/// The known jobs among `names` (every known job if empty, forgetting those no worker renewed
/// for `recent_ms`), with their live runners (`catalogue_read.lua`). A catalogue key of
/// another type is [`crate::Error::BrokenKey`] ([`super::broken`]).
pub async fn read(
    conn: &mut impl ConnectionLike,
    keys: &Keys,
    recent_ms: u64,
    names: &[&str],
) -> Result<Vec<StoredJob>> {
    let mut call = scripts::CATALOGUE_READ.key(keys.catalogue_jobs());
    call.key(keys.catalogue_writers())
        .key(keys.catalogue_runners_prefix())
        .arg(recent_ms);
    for name in names {
        call.arg(*name);
    }
    let (now, rows): (u64, Vec<Row>) = call
        .invoke_async(conn)
        .await
        .map_err(super::broken::of_script)?;
    Ok(rows
        .into_iter()
        .map(|(name, definition, writer, lease_end, runners)| StoredJob {
            name,
            definition,
            writer,
            lease_end,
            runners: runners
                .chunks(2)
                .filter_map(|pair| match pair {
                    [worker, value] => Some((worker.clone(), queues_of(value))),
                    _ => None,
                })
                .collect(),
            now,
        })
        .collect())
}

/// The queues in a runner's value (`<lease end> <q1,q2>`).
fn queues_of(value: &str) -> Vec<String> {
    value
        .split_once(' ')
        .map(|(_, queues)| {
            queues
                .split(',')
                .filter(|q| !q.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}
