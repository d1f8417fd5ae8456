//! Failover on Redis Cluster: 3 masters with a replica each (AOF on). A master is killed while
//! a producer dispatches and a worker runs jobs; its replica takes over, and the worker goes on
//! without a restart. With `wait_for_replicas(1, ..)`, every dispatch that returned `Ok` runs;
//! without it, the jobs lost to asynchronous replication are counted and reported.

use gator_core::{Client, job};
use gator_tests::failover::{RunLog, assert_none_lost, produce};
use gator_tests::{RedisCluster, TestWorker, wait_until};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static RAN: RunLog = RunLog::new();

#[job(queue = "f0")]
async fn numbered(id: u64) {
    RAN.record(id);
}

fn ran() -> HashSet<u64> {
    RAN.ran()
}

const QUEUES: [&str; 6] = ["f0", "f1", "f2", "f3", "f4", "f5"];

/// Dispatches jobs `from..` round-robin over [`QUEUES`] until `stop`, one at a time.
async fn produce_round_robin(client: Client, from: u64, stop: &AtomicBool) -> (Vec<u64>, usize) {
    produce(from, stop, |id| {
        let queue = QUEUES[id as usize % QUEUES.len()];
        let client = client.clone();
        async move {
            Numbered::call(id)
                .queue(queue)
                .through(&client)
                .dispatch()
                .await
        }
    })
    .await
}

/// Kills the master of queue `f0` after `acked_before` jobs, waits for its replica to take
/// over, dispatches on, and returns (acked ids, failed dispatches, ids acked that never ran).
async fn run_through_a_failover(
    cluster: &mut RedisCluster,
    client: Client,
    from: u64,
) -> (Vec<u64>, usize, Vec<u64>) {
    let worker = TestWorker::start(&cluster.url(), Some(&QUEUES.join(",")), 10);
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let producer = {
        let (client, stop) = (client.clone(), stop.clone());
        tokio::spawn(async move { produce_round_robin(client, from, &stop).await })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let victim = cluster.master_of("gator:{f0}:queue");
    cluster.kill(victim);
    // The replica is promoted once the others agree the master is gone (node timeout 2 s).
    wait_until(
        "a replica to take over",
        Duration::from_secs(30),
        || async { !cluster.masters().contains(&victim) && cluster.masters().len() == 3 },
    )
    .await;
    cluster.wait_until_healthy();
    tokio::time::sleep(Duration::from_millis(2000)).await; // dispatching on to the new master
    stop.store(true, Ordering::SeqCst);
    let (acked, failed) = producer.await.unwrap();
    let after: Vec<u64> = acked.iter().copied().filter(|id| id % 6 == 0).collect();
    assert!(!after.is_empty());
    let lost = RAN.lost_of(&acked).await;
    worker.stop().await;
    (acked, failed, lost)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_wait_for_replicas_every_acknowledged_job_survives_a_master_failover() {
    let mut cluster = RedisCluster::start(3, 1);
    let client = Client::builder(cluster.url())
        .wait_for_replicas(1, Duration::from_secs(1))
        .connect()
        .await
        .unwrap();
    let (acked, failed, lost) = run_through_a_failover(&mut cluster, client, 0).await;
    eprintln!(
        "with WAIT 1: {} dispatches acknowledged, {failed} failed during the failover, {} lost",
        acked.len(),
        lost.len()
    );
    assert_none_lost(&acked, &lost);
    // The worker (never restarted) ran jobs of the failed-over queue dispatched after it.
    let last_f0 = acked.iter().rev().find(|id| *id % 6 == 0).unwrap();
    assert!(ran().contains(last_f0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_waiting_a_failover_can_lose_acknowledged_jobs_and_the_worker_still_goes_on() {
    let mut cluster = RedisCluster::start(3, 1);
    let client = Client::connect(&cluster.url()).await.unwrap();
    let (acked, failed, lost) = run_through_a_failover(&mut cluster, client, 1_000_000).await;
    // A measurement, not a promise: asynchronous replication may lose the last writes.
    eprintln!(
        "without WAIT: {} dispatches acknowledged, {failed} failed during the failover, {} lost ({:?})",
        acked.len(),
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    assert!(
        acked.len() > 100,
        "the producer hardly ran: {}",
        acked.len()
    );
    let last_f0 = acked.iter().rev().find(|id| *id % 6 == 0).unwrap();
    assert!(
        ran().contains(last_f0),
        "the worker stopped taking jobs of the failed-over queue"
    );
}
