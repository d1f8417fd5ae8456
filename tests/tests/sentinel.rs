//! Redis Sentinel: a master, a replica and a sentinel, all real `redis-server` processes. The
//! client, the worker and the CLI find the master through the sentinel; a failover forced in
//! the middle of a run (and a master SIGKILLed) is followed without a restart, and with
//! `wait_for_replicas(1, ..)` every dispatch that returned `Ok` runs.

use gator_core::{Client, job};
use gator_tests::failover::{RunLog, assert_none_lost, produce};
use gator_tests::{RedisSentinel, SENTINEL_SERVICE, TestWorker, wait_until};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static RAN: RunLog = RunLog::new();

#[job(queue = "sentinel")]
async fn numbered(id: u64) {
    RAN.record(id);
}

fn ran() -> HashSet<u64> {
    RAN.ran()
}

async fn waiting_client(set: &RedisSentinel) -> Client {
    Client::builder(set.url())
        .wait_for_replicas(1, Duration::from_secs(1))
        .connect()
        .await
        .expect("connect through the sentinel")
}

/// Runs a producer and a worker, calls `fail` in the middle, dispatches on for 2 s more, and
/// returns (acked ids, failed dispatches, acked ids that never ran).
async fn run_through(
    set: &mut RedisSentinel,
    from: u64,
    fail: impl FnOnce(&mut RedisSentinel),
) -> (Vec<u64>, usize, Vec<u64>) {
    let client = waiting_client(set).await;
    let worker = TestWorker::start(&set.url(), Some("sentinel"), 10);
    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let stop = stop.clone();
        tokio::spawn(async move {
            produce(from, &stop, |id| {
                Numbered::call(id).through(&client).dispatch()
            })
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    fail(set);
    set.wait_until_replicated();
    tokio::time::sleep(Duration::from_millis(2000)).await; // dispatching on to the new master
    stop.store(true, Ordering::SeqCst);
    let (acked, failed) = producer.await.unwrap();
    let lost = RAN.lost_of(&acked).await;
    worker.stop().await;
    eprintln!(
        "{} dispatches acknowledged, {failed} failed during the failover, {} lost",
        acked.len(),
        lost.len()
    );
    (acked, failed, lost)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_dispatched_through_the_sentinel_runs_on_a_worker_that_found_the_master_there() {
    let set = RedisSentinel::start();
    let client = Client::connect(&set.url()).await.unwrap();
    Numbered::call(7).through(&client).dispatch().await.unwrap();
    // The job is on the master the sentinel names, not on the replica's own write path.
    let master = set.master_port();
    assert_eq!(
        set.server(master).cli(&["LLEN", "gator:{sentinel}:queue"]),
        "1"
    );
    let worker = TestWorker::start(&set.url(), Some("sentinel"), 2);
    wait_until("the job to run", Duration::from_secs(10), || async {
        ran().contains(&7)
    })
    .await;
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_forced_mid_run_is_followed_and_loses_no_acknowledged_job() {
    let mut set = RedisSentinel::start();
    let first = set.master_port();
    let (acked, _failed, lost) = run_through(&mut set, 0, |set| {
        let new = set.force_failover();
        assert_ne!(new, first);
    })
    .await;
    assert_none_lost(&acked, &lost);
    // The worker, never restarted, ran jobs dispatched to the new master.
    assert_ne!(set.master_port(), first);
    assert!(ran().contains(acked.last().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_is_replaced_by_its_replica_and_no_acknowledged_job_is_lost() {
    let mut set = RedisSentinel::start();
    let (acked, _failed, lost) = run_through(&mut set, 1_000_000, |set| {
        let killed = set.kill_master();
        set.wait_for_new_master(killed);
        // Back, it is made a replica of the new master: `WAIT 1` can succeed again.
        set.restart(killed);
    })
    .await;
    assert_none_lost(&acked, &lost);
    assert!(ran().contains(acked.last().unwrap()));
}

fn gator(url: &str, args: &[&str]) -> std::process::Output {
    gator_tests::run_cli(env!("CARGO_BIN_EXE_gator-test-worker"), url, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_finds_the_master_through_the_sentinel_and_names_a_wrong_service() {
    let set = RedisSentinel::start();
    let listed = gator(&set.url(), &["dead", "list"]);
    assert!(listed.status.success());
    assert!(String::from_utf8_lossy(&listed.stdout).contains('0'));

    let wrong = set.url().replace(SENTINEL_SERVICE, "no-such-master");
    let failed = gator(&wrong, &["dead", "list"]);
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("no-such-master"), "{stderr}");

    let err = Client::connect(&wrong).await.unwrap_err().to_string();
    assert!(err.contains("no-such-master"), "{err}");
    // A password in the URL never shows in an error.
    let secret = format!(
        "redis+sentinel://app:hunter2@127.0.0.1:{}/no-such-master",
        set.sentinel_port()
    );
    let err = Client::connect(&secret).await.unwrap_err().to_string();
    assert!(
        !err.contains("hunter2") && err.contains("app:***@"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_the_sentinel_and_the_master_are_verified_against_the_given_ca() {
    let set = RedisSentinel::start_tls();
    let url = set.tls_url();
    let client = Client::builder(&url)
        .ca_cert(set.certs().ca())
        .connect()
        .await
        .expect("connect to a TLS sentinel and master");
    Numbered::call(11)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let mut config = gator_worker::WorkerConfig::new(&url);
    config.queues = "sentinel".parse().unwrap();
    config.tls.ca_cert = Some(set.certs().ca());
    let worker = TestWorker::start_with(config);
    wait_until("the job to run", Duration::from_secs(10), || async {
        ran().contains(&11)
    })
    .await;
    worker.stop().await;

    // A CA that signed neither: refused, and the password is not shown.
    let err = Client::builder(&url)
        .ca_cert(set.certs().other_ca())
        .connect()
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains(gator_tests::TLS_PASSWORD), "{err}");
    // TLS files with a plain sentinel URL would connect in clear text: refused.
    let plain = url.replace("rediss+sentinel", "redis+sentinel");
    let err = Client::builder(&plain)
        .ca_cert(set.certs().ca())
        .connect()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not use TLS"), "{err}");
}
