//! Batch admission (`admit.lua` deciding many jobs in one call, as a worker's group commit
//! sends it): the jobs a batch starts are the ones that one-at-a-time admission would start,
//! in the same order, and every control holds inside one call. Each test calls the script
//! directly, as one process, so what a single batch decides is visible without a worker.

use gator_core::flow::FlowSetting;
use gator_core::store::{AdmitRequest, Admitted, Fetch, Fetched, NextLook, Presence};
use gator_core::{Client, PendingJob};
use gator_tests::{RedisServer, client, set_flow};
use std::time::Duration;

#[gator_core::job(name = "batch_probe")]
async fn batch_probe(_id: u64, _key: String) {}

const PROCESS: &str = "batch-test-process";

fn probe(queue: &str, id: u64, key: &str) -> PendingJob<BatchProbe> {
    let job = BatchProbe::call(id, key.to_owned()).queue(queue);
    if key.is_empty() {
        job
    } else {
        job.limit_key(key)
    }
}

/// One `admit.lua` call for `max` jobs, settling `acks` first, as the worker's group sends it
/// (with the process's lease taken first).
async fn admit_batch(client: &Client, queue: &str, max: usize, acks: &[Fetched]) -> Admitted {
    Presence::new(client.connection(), client.keys())
        .renew_lease(queue, PROCESS, Duration::from_secs(30))
        .await
        .expect("lease taken");
    let acks: Vec<(&Fetched, &str)> = acks.iter().map(|job| (job, "1 ")).collect();
    let request = AdmitRequest {
        queue,
        process: PROCESS,
        max,
        spare: 0,
        window: None,
        acks: &acks,
        retention: Duration::from_secs(60),
        shared: None,
    };
    Fetch::new(client.connection(), client.keys())
        .admit(&request)
        .await
        .expect("admit.lua runs")
}

/// The probe ids of admitted jobs, in the order the batch started them.
fn ids(admitted: &Admitted) -> Vec<u64> {
    admitted
        .jobs
        .iter()
        .map(|job| {
            let doc: serde_json::Value = serde_json::from_slice(&job.raw).expect("a JSON payload");
            doc["args"][0].as_u64().expect("the probe id")
        })
        .collect()
}

async fn units_in_use(redis: &RedisServer, queue: &str) -> i64 {
    let mut conn = redis.client().await;
    redis::cmd("HGET")
        .arg(format!("gator:{{{queue}}}:used"))
        .arg("!total")
        .query_async::<Option<i64>>(&mut conn)
        .await
        .expect("HGET")
        .unwrap_or(0)
}

#[tokio::test]
async fn one_batch_starts_jobs_across_limit_keys_by_priority_then_in_dispatch_order() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    // Three limit keys interleaved, with priorities that cut across them.
    let jobs = [
        (0, "east", 100),
        (1, "north", 100),
        (2, "west", 5),
        (3, "east", 5),
        (4, "north", 100),
        (5, "west", 100),
        (6, "east", 50),
        (7, "north", 5),
    ];
    for (id, key, priority) in jobs {
        probe("mixed", id, key)
            .priority(priority)
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let first = admit_batch(&client, "mixed", 5, &[]).await;
    // 5 (ids 2, 3, 7), then 50 (6), then the first of the 100s (0).
    assert_eq!(ids(&first), vec![2, 3, 7, 6, 0]);
    let rest = admit_batch(&client, "mixed", 10, &[]).await;
    assert_eq!(ids(&rest), vec![1, 4, 5]);
    assert!(admit_batch(&client, "mixed", 10, &[]).await.jobs.is_empty());
}

#[tokio::test]
async fn one_batch_never_starts_more_units_than_the_limit_and_blocks_a_key_at_its_share() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    set_flow(
        &client,
        "capped",
        &[
            FlowSetting::Limit(Some(6)),
            FlowSetting::Share {
                key: Some("east".into()),
                percent: Some(50),
            },
        ],
    )
    .await;
    // east first in line with 6 jobs, then north with 6.
    for id in 0..6 {
        probe("capped", id, "east")
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    for id in 6..12 {
        probe("capped", id, "north")
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let batch = admit_batch(&client, "capped", 12, &[]).await;
    // east stops at its share of 3 while north waits; north fills the rest of the limit.
    assert_eq!(ids(&batch), vec![0, 1, 2, 6, 7, 8]);
    assert_eq!(units_in_use(&redis, "capped").await, 6);
    // Full: a second batch starts nothing, and says to wait for a signal.
    let full = admit_batch(&client, "capped", 12, &[]).await;
    assert!(full.jobs.is_empty());
    assert_eq!(full.next, NextLook::OnSignal);
}

#[tokio::test]
async fn the_successes_a_batch_settles_free_their_units_for_the_jobs_it_starts() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    set_flow(&client, "relay", &[FlowSetting::Limit(Some(2))]).await;
    for id in 0..6 {
        probe("relay", id, "")
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let first = admit_batch(&client, "relay", 6, &[]).await;
    assert_eq!(ids(&first), vec![0, 1]);
    // Both succeed; the call that settles them starts the next two at once.
    let second = admit_batch(&client, "relay", 6, &first.jobs).await;
    assert_eq!(second.acked, vec![true, true]);
    assert_eq!(ids(&second), vec![2, 3]);
    assert_eq!(units_in_use(&redis, "relay").await, 2);
    // A success settled twice (a lost reply, a retried write) is not in flight the second time,
    // and frees nothing more.
    let again = admit_batch(&client, "relay", 0, &first.jobs).await;
    assert_eq!(again.acked, vec![false, false]);
    assert_eq!(units_in_use(&redis, "relay").await, 2);
    let last = admit_batch(&client, "relay", 6, &second.jobs).await;
    assert_eq!(ids(&last), vec![4, 5]);
    let done = admit_batch(&client, "relay", 6, &last.jobs).await;
    assert!(done.jobs.is_empty());
    assert_eq!(units_in_use(&redis, "relay").await, 0);
}

#[tokio::test]
async fn one_batch_starts_only_what_the_rate_allows_and_says_when_the_next_may_start() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    set_flow(
        &client,
        "paced",
        &[FlowSetting::Rate {
            name: None,
            rate: Some("10/1s".parse().unwrap()),
        }],
    )
    .await;
    for id in 0..5 {
        probe("paced", id, "")
            .through(&client)
            .dispatch()
            .await
            .unwrap();
    }
    let batch = admit_batch(&client, "paced", 5, &[]).await;
    assert_eq!(
        ids(&batch),
        vec![0],
        "an evenly spaced rate starts one job per interval"
    );
    let NextLook::At(next) = batch.next else {
        panic!(
            "a rate-limited queue says when to look again, got {:?}",
            batch.next
        );
    };
    let wait = next.saturating_sub(batch.now_ms);
    assert!(
        (90..=100).contains(&wait),
        "the next start is one interval (100 ms) on, got {wait} ms"
    );
}
