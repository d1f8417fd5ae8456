//! Where a queued job stands (`Client::position`): the k-th of N is k, it drops as workers
//! take jobs, an expected start once the queue has throughput; a scheduled job, and the CLI's
//! `job position`. A parked job (a controlled queue): its place among its parking key's jobs
//! (`parked` module). On one server, or on a cluster with `GATOR_TEST_REDIS=cluster`.

use gator_core::{Client, ExpectedStart, Position, job};
use gator_tests::{RedisServer, client, run_cli, wait_until};
use std::time::Duration;

#[path = "position/parked.rs"]
mod parked;

/// The test worker binary's job (same wire name and arguments).
#[job(queue = "pos")]
async fn pos_nap(_id: u64, _millis: u64) {}

/// A job with a priority: its queue is controlled, and it is parked.
#[job(queue = "pos-flow", priority = 5)]
async fn pos_parked(_id: u64) {}

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

async fn ahead(client: &Client, jid: &str) -> Option<u64> {
    match client.position(jid).await.unwrap() {
        Position::Queued { ahead, .. } => Some(ahead),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kth_job_of_a_queue_stands_kth_and_moves_up() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let mut jids = Vec::new();
    for id in 0..40 {
        jids.push(
            PosNap::call(id, 150)
                .through(&client)
                .dispatch()
                .await
                .unwrap(),
        );
    }
    for (k, jid) in jids.iter().enumerate() {
        let Position::Queued {
            ahead,
            length,
            exact,
            expected_start,
            ..
        } = client.position(jid).await.unwrap()
        else {
            panic!("job {k} is not queued");
        };
        assert_eq!((ahead, length, exact), (k as u64, 40, true), "job {k}");
        assert!(
            matches!(expected_start, ExpectedStart::Unknown { .. }),
            "no history yet"
        );
    }
    let shown = run_cli(WORKER, &redis.url(), &["job", "position", &jids[9]]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("position  10"), "{shown}");

    let _worker = gator_tests::spawn_worker_process(WORKER, &redis.url(), "pos", 1);
    let last = jids.last().unwrap();
    wait_until("the last job moved up", Duration::from_secs(20), || async {
        ahead(&client, last).await.is_some_and(|a| a < 35)
    })
    .await;
    // Once the worker's counts reach Redis (every second), an expected start is given.
    wait_until("an expected start", Duration::from_secs(20), || async {
        matches!(
            client.position(last).await.unwrap(),
            Position::Queued {
                expected_start: ExpectedStart::At { .. },
                ..
            }
        )
    })
    .await;
    let Position::Queued {
        expected_start: ExpectedStart::At { at, per_minute },
        ..
    } = client.position(last).await.unwrap()
    else {
        panic!("the last job was taken before the test looked");
    };
    assert!(per_minute > 0.0);
    let now = std::time::UNIX_EPOCH + Duration::from_millis(client.redis_time().await.unwrap());
    assert!(at >= now, "it starts later, not before now");
}

#[tokio::test]
async fn parked_scheduled_and_unknown_jobs_say_so() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let parked = PosParked::call(1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let Position::Parked { queue, place } = client.position(&parked).await.unwrap() else {
        panic!("a job with a priority is parked");
    };
    assert_eq!(queue, "pos-flow");
    let place = place.expect("its place is known");
    assert_eq!(
        (place.key.as_deref(), place.ahead, place.length),
        (Some(""), 0, 1)
    );
    let later = PosNap::call(1, 1)
        .after(Duration::from_secs(60))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert!(matches!(
        client.position(&later).await.unwrap(),
        Position::Scheduled { .. }
    ));
    assert!(matches!(
        client.position("no-such-jid").await.unwrap(),
        Position::NotWaiting { .. }
    ));
}
