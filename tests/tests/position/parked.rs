//! A parked job's place (`Position::Parked`'s `place`): the jobs of its parking key before
//! it, found from what `park` wrote in its status record. The k-th parked job of a key stands
//! k-th and moves up as a worker process takes jobs; two keys count apart; an urgent job
//! dispatched last goes first; fair keys' tags and critical jobs; a job admitted a moment ago
//! is not reported parked; a job parked when due (by the poller) knows its place.

use super::{PosNap, WORKER};
use gator_core::flow::FlowSetting;
use gator_core::store::{AdmitRequest, Fetch, Presence};
use gator_core::{Client, ExpectedStart, ParkedPlace, PendingJob, Position};
use gator_tests::{RedisServer, client, run_cli, set_flow, wait_until};
use std::time::Duration;

/// The job's place among its key's parked jobs, if it is parked and found.
async fn place(client: &Client, jid: &str) -> Option<ParkedPlace> {
    match client.position(jid).await.unwrap() {
        Position::Parked { place, .. } => place,
        _ => None,
    }
}

/// The jobs before it among its key's parked jobs.
async fn ahead(client: &Client, jid: &str) -> u64 {
    place(client, jid)
        .await
        .unwrap_or_else(|| panic!("job {jid} has no parked place"))
        .ahead
}

/// A server, a client, and `queue` controlled with a limit of 1 (one job at a time).
async fn limited(queue: &str) -> (RedisServer, Client) {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    set_flow(&client, queue, &[FlowSetting::Limit(Some(1))]).await;
    (redis, client)
}

/// Dispatches each job in order, returning their jids.
async fn dispatch_all(client: &Client, jobs: Vec<PendingJob<PosNap>>) -> Vec<String> {
    let mut jids = Vec::new();
    for job in jobs {
        jids.push(job.through(client).dispatch().await.unwrap());
    }
    jids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kth_parked_job_of_a_key_stands_kth_and_moves_up() {
    let (redis, client) = limited("pos-limit").await;
    let jobs = (0..16)
        .map(|id| PosNap::call(id, 400).queue("pos-limit").limit_key("a"))
        .collect();
    let jids = dispatch_all(&client, jobs).await;
    for (k, jid) in jids.iter().enumerate() {
        let place = place(&client, jid).await.expect("parked, with its place");
        assert_eq!(
            (place.key.as_deref(), place.ahead, place.length),
            (Some("a"), k as u64, 16),
            "job {k}"
        );
        assert_eq!((place.ready_keys, place.waiting_keys), (1, 1));
        assert!(
            matches!(place.expected_start, ExpectedStart::Unknown { .. }),
            "no history yet"
        );
    }
    let shown = run_cli(WORKER, &redis.url(), &["job", "position", &jids[3]]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    for line in [
        "status    parked",
        "key       a",
        "position  4",
        "length    16",
    ] {
        assert!(shown.contains(line), "{line:?} in {shown}");
    }
    let shown = run_cli(
        WORKER,
        &redis.url(),
        &["job", "position", &jids[3], "--json"],
    );
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("JSON");
    assert_eq!(
        (shown["ahead"].as_u64(), shown["critical"].as_bool()),
        (Some(3), Some(false))
    );

    // One job at a time (limit 1): the last one moves up, one place per job taken.
    let _worker = gator_tests::spawn_worker_process(WORKER, &redis.url(), "pos-limit", 2);
    let last = jids.last().unwrap();
    let seen = std::cell::RefCell::new(vec![ahead(&client, last).await]);
    wait_until("the last job moved up", Duration::from_secs(20), || async {
        let now = ahead(&client, last).await;
        let mut seen = seen.borrow_mut();
        if Some(&now) != seen.last() {
            seen.push(now);
        }
        now <= 11
    })
    .await;
    let seen = seen.into_inner();
    assert!(seen.windows(2).all(|w| w[1] < w[0]), "only up: {seen:?}");
    // The worker's counts reach Redis every second: the key's expected start from them.
    wait_until("an expected start", Duration::from_secs(20), || async {
        place(&client, last).await.is_some_and(|p| {
            matches!(p.expected_start, ExpectedStart::At { per_minute, .. } if per_minute > 0.0)
        })
    })
    .await;
}

#[tokio::test]
async fn two_keys_count_apart_and_an_urgent_job_goes_first() {
    let (_redis, client) = limited("pos-keys").await;
    let jobs = (0..6)
        .map(|id| {
            let key = if id % 2 == 0 { "a" } else { "b" };
            PosNap::call(id, 1).queue("pos-keys").limit_key(key)
        })
        .collect();
    let jids = dispatch_all(&client, jobs).await;
    for (i, jid) in jids.iter().enumerate() {
        let place = place(&client, jid).await.expect("parked");
        let key = if i % 2 == 0 { "a" } else { "b" };
        assert_eq!(
            (place.key.as_deref(), place.ahead, place.length),
            (Some(key), i as u64 / 2, 3),
            "job {i}"
        );
        assert_eq!(place.waiting_keys, 2);
    }
    // Priority 1 beats the default 100: dispatched last, it is its key's next job.
    let urgent = PosNap::call(9, 1)
        .queue("pos-keys")
        .limit_key("a")
        .priority(1)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(ahead(&client, &urgent).await, 0);
    assert_eq!(
        ahead(&client, &jids[0]).await,
        1,
        "the first of key a moved back"
    );
    assert_eq!(ahead(&client, &jids[4]).await, 3);
    assert_eq!(ahead(&client, &jids[5]).await, 2, "key b is not touched");
}

#[tokio::test]
async fn fair_keys_stand_by_their_tags_and_critical_jobs_apart() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let fair = |id: u64, key: &str| PosNap::call(id, 1).queue("pos-fair").fair_key(key);
    // Tags (weight 1, a step of 100): acme 100, 200, 300; beta 199; gamma 199 (a tie with
    // beta, broken by dispatch order).
    let jobs = vec![
        fair(0, "acme"),
        fair(1, "acme"),
        fair(2, "acme"),
        fair(3, "beta"),
        fair(4, "gamma"),
    ];
    let jids = dispatch_all(&client, jobs).await;
    let mut aheads = Vec::new();
    for jid in &jids {
        aheads.push(ahead(&client, jid).await);
    }
    assert_eq!(aheads, [0, 3, 4, 1, 2], "acme, acme, acme, beta, gamma");

    let critical = dispatch_all(
        &client,
        (0..2)
            .map(|id| PosNap::call(id, 1).queue("pos-fair").critical())
            .collect(),
    )
    .await;
    for (k, jid) in critical.iter().enumerate() {
        let place = place(&client, jid).await.expect("parked, critical");
        assert_eq!((place.key, place.ahead, place.length), (None, k as u64, 2));
    }
    let shown = run_cli(
        WORKER,
        &redis.url(),
        &["job", "position", &critical[1], "--json"],
    );
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).expect("JSON");
    assert_eq!(shown["critical"], true);
    assert_eq!(shown["key"], serde_json::Value::Null);
}

#[tokio::test]
async fn a_job_admitted_a_moment_ago_is_not_reported_parked() {
    let (_redis, client) = limited("pos-admit").await;
    let jobs = (0..3)
        .map(|id| PosNap::call(id, 1).queue("pos-admit").limit_key("a"))
        .collect();
    let jids = dispatch_all(&client, jobs).await;
    // A worker's admission, as one process: the first job leaves its parking set for the
    // process's in-flight list; its record says `queued` until the worker marks it running.
    let process = "position-test-process";
    let queue = "pos-admit";
    let lease = Duration::from_secs(30);
    Presence::new(client.connection(), client.keys())
        .renew_lease(queue, process, lease)
        .await
        .unwrap();
    let request = AdmitRequest {
        queue,
        process,
        max: 1,
        spare: 0,
        window: None,
        acks: &[],
        retention: Duration::from_secs(60),
        shared: None,
    };
    let admitted = Fetch::new(client.connection(), client.keys())
        .admit(&request)
        .await
        .unwrap();
    assert_eq!(admitted.jobs.len(), 1);
    assert!(matches!(
        client.status(&jids[0]).await.unwrap(),
        gator_core::JobStatus::Queued
    ));
    assert_eq!(
        client.position(&jids[0]).await.unwrap(),
        Position::Parked {
            queue: queue.into(),
            place: None
        },
        "admitted: no longer among its key's parked jobs"
    );
    assert_eq!(ahead(&client, &jids[1]).await, 0, "the next one moved up");
    assert_eq!(
        place(&client, &jids[2]).await.map(|p| (p.ahead, p.length)),
        Some((1, 2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_parked_when_due_knows_its_place() {
    let (redis, client) = limited("pos-due").await;
    let _worker = gator_tests::spawn_worker_process(WORKER, &redis.url(), "pos-due", 1);
    // The limit's one unit taken for a while, so the due job waits parked behind it.
    let long = PosNap::call(0, 8_000).queue("pos-due").limit_key("a");
    let long = long.through(&client).dispatch().await.unwrap();
    wait_until("the long job running", Duration::from_secs(15), || async {
        !matches!(
            client.position(&long).await.unwrap(),
            Position::Parked { .. }
        )
    })
    .await;
    let due = PosNap::call(1, 1).queue("pos-due").limit_key("a");
    let due = due
        .after(Duration::from_millis(500))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    // The worker's poller parks it when due (promote_due.lua), writing where it is.
    wait_until("the due job parked", Duration::from_secs(15), || async {
        matches!(
            client.position(&due).await.unwrap(),
            Position::Parked { .. }
        )
    })
    .await;
    let place = place(&client, &due).await.expect("parked, with its place");
    assert_eq!(
        (place.key.as_deref(), place.ahead, place.length),
        (Some("a"), 0, 1)
    );
}
