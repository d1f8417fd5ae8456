//! `gator-bench pages N`: what one page of a dead set costs with N entries in each of 20
//! queues: the first page and a page 90 % deep, merged over every queue (by cursor) and of one
//! queue (by rank), as the dashboard and `gator-worker dead list` read them. The sets are
//! filled by a script inside Redis (a million entries a queue in seconds), and emptied after.

use crate::measure::report;
use anyhow::Context;
use gator_core::SetKind;
use std::time::Instant;

const QUEUES: usize = 20;
const PER_PAGE: usize = 25;
const ROUNDS: usize = 50;

/// Adds to `KEYS[1]` the small dead entries ARGV[2] to ARGV[3] of queue ARGV[1], entry i
/// scored 1e12 + i.
const FILL: &str = r#"
local queue, first, last = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
for start = first, last, 1000 do
  local batch = {}
  for i = start, math.min(start + 999, last) do
    batch[#batch + 1] = 1000000000000 + i
    batch[#batch + 1] = '{"jid":"0193a5f0-0000-7000-8000-' .. string.format('%012d', i) ..
      '","job":"noop","args":[' .. i .. '],"queue":"' .. queue ..
      '","created_at":1,"enqueued_at":1,"attempt":1,"error":"failed"}'
  end
  redis.call('ZADD', KEYS[1], unpack(batch))
end
return last
"#;

/// Entries one call of [`FILL`] adds: well within a client's response timeout.
const FILL_CHUNK: usize = 100_000;

pub async fn pages(n: usize) -> anyhow::Result<()> {
    let client = crate::modes::client().await?;
    let admin = gator_core::Admin::new(client.clone());
    let queues: Vec<String> = (0..QUEUES).map(|q| format!("pages{q:02}")).collect();
    let fill = redis::Script::new(FILL);
    let mut conn = client.connection();
    let started = Instant::now();
    for queue in &queues {
        let key = client.keys().dead(queue);
        for first in (1..=n).step_by(FILL_CHUNK) {
            fill.key(&key)
                .arg(queue)
                .arg(first)
                .arg((first + FILL_CHUNK - 1).min(n))
                .invoke_async::<()>(&mut conn)
                .await
                .context("filling a dead set")?;
        }
        redis::cmd("SADD")
            .arg(client.keys().queues())
            .arg(queue)
            .query_async::<()>(&mut conn)
            .await?;
    }
    eprintln!("filled {QUEUES} × {n} entries in {:?}", started.elapsed());
    // 90 % deep: after the entry of score 1e12 + 0.9 n in the last queue.
    let deep = format!(
        "{}:1:{}",
        1_000_000_000_000 + n * 9 / 10,
        queues[QUEUES - 1]
    );
    let first = time(|| admin.set_page(SetKind::Dead, None, None, PER_PAGE)).await?;
    let merged_deep =
        time(|| admin.set_page(SetKind::Dead, None, Some(deep.as_str()), PER_PAGE)).await?;
    let one_deep =
        time(|| admin.list_set(SetKind::Dead, Some(&queues[0]), n * 9 / 10, PER_PAGE)).await?;
    let counted = time(|| admin.set_len(SetKind::Dead, None)).await?;
    for queue in &queues {
        admin.clear_set(SetKind::Dead, Some(queue)).await?;
    }
    redis::cmd("SREM")
        .arg(client.keys().queues())
        .arg(&queues)
        .query_async::<()>(&mut conn)
        .await?;
    report(
        format!(
            r#"{{"mode":"pages","entries_per_queue":{n},"queues":{QUEUES},"per_page":{PER_PAGE},"first_page_ms":{first:.3},"merged_page_90pct_ms":{merged_deep:.3},"one_queue_page_90pct_ms":{one_deep:.3},"count_ms":{counted:.3}}}"#
        ),
        format!(
            "pages: {QUEUES} queues × {n} dead entries, {PER_PAGE} a page (median of {ROUNDS}): \
             first page {first:.3} ms, merged page 90% deep {merged_deep:.3} ms, one queue's page \
             90% deep {one_deep:.3} ms, counting {counted:.3} ms"
        ),
    );
    Ok(())
}

/// The median time of [`ROUNDS`] calls of `read`, in ms.
async fn time<T, F, Fut>(mut read: F) -> anyhow::Result<f64>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = gator_core::Result<T>>,
{
    let mut took = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        read().await?;
        took.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    took.sort_by(f64::total_cmp);
    Ok(took[ROUNDS / 2])
}
