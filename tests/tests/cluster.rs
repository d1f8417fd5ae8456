//! Gator on a Redis Cluster the test starts: 3 masters on loopback.

use gator_tests::RedisCluster;

#[test]
fn the_harness_starts_a_cluster_whose_queues_spread_over_its_masters() {
    let cluster = RedisCluster::start(3, 0);
    assert_eq!(cluster.masters().len(), 3);
    let homes: std::collections::BTreeSet<u16> = ["default", "high", "mail", "a", "b", "c"]
        .iter()
        .map(|q| cluster.master_of(&format!("gator:{{{q}}}:queue")))
        .collect();
    assert!(homes.len() >= 2, "six queues all on one master: {homes:?}");
    assert_eq!(cluster.cli(&["SET", "gator:{x}:k", "v"]), "OK");
    assert_eq!(cluster.cli(&["GET", "gator:{x}:k"]), "v");
}

static RAN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

#[gator_core::job]
async fn on_cluster(tag: String) {
    RAN.lock().unwrap().push(tag);
}

const QUEUES: [&str; 6] = ["default", "high", "mail", "a", "b", "c"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_dispatched_to_queues_on_every_master_run_on_a_worker_of_the_cluster() {
    let cluster = RedisCluster::start(3, 0);
    let client = gator_core::Client::connect(&cluster.url())
        .await
        .expect("a client of the cluster from its nodes' URLs");
    assert!(client.is_cluster());
    for queue in QUEUES {
        client
            .dispatch(OnCluster::call(format!("job-{queue}")).queue(queue))
            .await
            .unwrap_or_else(|e| panic!("dispatch to {queue}: {e}"));
    }
    let worker = gator_worker::Worker::builder()
        .redis_url(cluster.seed_url())
        .cluster(true)
        .queues(&QUEUES.join(","))
        .poll_interval(std::time::Duration::from_millis(50))
        .jobs(["on_cluster"])
        .build()
        .expect("a valid worker");
    let stop = gator_worker::CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    gator_tests::wait_until(
        "every job to run",
        std::time::Duration::from_secs(15),
        || async { RAN.lock().unwrap().len() >= QUEUES.len() },
    )
    .await;
    stop.cancel();
    running
        .await
        .unwrap()
        .expect("the worker ran on the cluster");
    let mut ran = RAN.lock().unwrap().clone();
    ran.sort();
    let mut expected: Vec<String> = QUEUES.iter().map(|q| format!("job-{q}")).collect();
    expected.sort();
    assert_eq!(ran, expected, "each job ran once");
    for queue in QUEUES {
        assert_eq!(
            cluster.cli(&["LLEN", &format!("gator:{{{queue}}}:queue")]),
            "0"
        );
    }
}
