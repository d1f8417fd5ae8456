//! Connections that go silent without closing (a NAT or load balancer dropping idle flows, a
//! half-open socket after a failover): the worker times out, replaces them, keeps its leases
//! and runs every job. The worker reaches Redis through a proxy that stops forwarding on every
//! open connection at once and keeps them open; connections made afterwards work.

use gator_core::job;
use gator_tests::{RedisServer, SilentProxy, TestWorker, client, wait_until};
use std::sync::Mutex;
use std::time::Duration;

static RAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

fn ran() -> Vec<u64> {
    RAN.lock().unwrap().clone()
}

#[job(queue = "quiet")]
async fn through_the_proxy(id: u64) {
    RAN.lock().unwrap().push(id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_connections_go_silent_replaces_them_and_runs_every_job() {
    let redis = RedisServer::start();
    let proxy = SilentProxy::start(redis.port());
    let client = client(&redis.url()).await; // the producer talks to Redis directly
    let worker = TestWorker::start(&proxy.url(), Some("quiet"), 4);
    client
        .dispatch_many((0..50).map(ThroughTheProxy::call))
        .await
        .unwrap();
    wait_until("the first 50 jobs", Duration::from_secs(15), || async {
        ran().len() == 50
    })
    .await;
    let connections_before = proxy.connections();

    // Every connection the worker has goes silent: its blocked fetches, its shared connection.
    proxy.silence();
    client
        .dispatch_many((50..100).map(ThroughTheProxy::call))
        .await
        .unwrap();
    wait_until(
        "the 50 jobs dispatched after the silence",
        Duration::from_secs(60),
        || async { ran().len() >= 100 },
    )
    .await;
    assert!(
        proxy.connections() > connections_before,
        "the worker made no new connection"
    );
    // Its lease held throughout: renewed on a new connection, never expired.
    let now = client.redis_time().await.unwrap();
    let expiry: f64 = redis
        .cli(&["ZRANGE", "gator:{quiet}:leases", "0", "0", "WITHSCORES"])
        .lines()
        .nth(1)
        .expect("the worker's lease")
        .parse()
        .unwrap();
    assert!(expiry > now as f64, "the worker's lease expired");
    let mut ids = ran();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 100, "every job ran");
    worker.stop().await;
}
