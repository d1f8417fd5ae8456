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
        OnCluster::call(format!("job-{queue}"))
            .queue(queue)
            .through(&client)
            .dispatch()
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
    run_until_each_queue_ran_once(worker, &RAN, "job").await;
    for queue in QUEUES {
        assert_eq!(
            cluster.cli(&["LLEN", &format!("gator:{{{queue}}}:queue")]),
            "0"
        );
    }
}

/// Runs `worker` until `ran` holds a tag for every one of [`QUEUES`], stops it, and asserts
/// that each job (tagged `<prefix>-<queue>`) ran once.
async fn run_until_each_queue_ran_once(
    worker: gator_worker::Worker,
    ran: &std::sync::Mutex<Vec<String>>,
    prefix: &str,
) {
    let stop = gator_worker::CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    gator_tests::wait_until(
        "every job to run",
        std::time::Duration::from_secs(15),
        || async { ran.lock().unwrap().len() >= QUEUES.len() },
    )
    .await;
    stop.cancel();
    running
        .await
        .unwrap()
        .expect("the worker ran on the cluster");
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    let mut expected: Vec<String> = QUEUES.iter().map(|q| format!("{prefix}-{q}")).collect();
    expected.sort();
    assert_eq!(ran, expected, "each job ran once");
}

/// Two queue names whose tags live on different masters of `cluster`.
fn queues_on_two_masters(cluster: &RedisCluster) -> (String, String) {
    let names: Vec<String> = (0..50).map(|i| format!("q{i}")).collect();
    let home = |q: &str| cluster.master_of(&format!("gator:{{{q}}}:queue"));
    let first = names[0].clone();
    let second = names
        .iter()
        .find(|q| home(q) != home(&first))
        .expect("50 queues cannot all live on one of three masters")
        .clone();
    (first, second)
}

static STEPS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

#[gator_core::job]
async fn chain_step(tag: String) {
    STEPS.lock().unwrap().push(tag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_whose_steps_live_on_different_masters_runs_in_order() {
    let cluster = RedisCluster::start(3, 0);
    let (a, b) = queues_on_two_masters(&cluster);
    let client = gator_core::Client::connect(&cluster.url()).await.unwrap();
    let chain = gator_core::Chain::new()
        .then(ChainStep::call("x1".into()).queue(a.as_str()))
        .then(ChainStep::call("x2".into()).queue(b.as_str()))
        .then(ChainStep::call("x3".into()).queue(a.as_str()));
    chain
        .through(&client)
        .dispatch()
        .await
        .expect("a chain across masters is stored");
    let worker = gator_worker::Worker::builder()
        .redis_url(cluster.url())
        .queues(&format!("{a},{b}"))
        .jobs(["chain_step"])
        .build()
        .expect("a valid worker");
    let stop = gator_worker::CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    gator_tests::wait_until(
        "the three steps",
        std::time::Duration::from_secs(15),
        || async {
            STEPS
                .lock()
                .unwrap()
                .iter()
                .filter(|s| s.starts_with('x'))
                .count()
                >= 3
        },
    )
    .await;
    stop.cancel();
    running.await.unwrap().expect("the worker ran");
    let steps: Vec<String> = STEPS
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.starts_with('x'))
        .cloned()
        .collect();
    assert_eq!(steps, ["x1", "x2", "x3"]);
    for queue in [&a, &b] {
        assert_eq!(
            cluster.cli(&["LLEN", &format!("gator:{{{queue}}}:outbox")]),
            "0"
        );
        assert_eq!(
            cluster.cli(&["HLEN", &format!("gator:{{{queue}}}:handoff")]),
            "0"
        );
    }
}

/// A hand-off cut short after either half, then finished by drains (two at once, as a
/// processor and a recovery pass may run), puts the next step on its queue exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_off_interrupted_after_either_half_moves_the_next_step_exactly_once() {
    use gator_core::store::{Recovery, crash as scripts};
    let cluster = RedisCluster::start(3, 0);
    let (a, b) = queues_on_two_masters(&cluster);
    let client = gator_core::Client::connect(&cluster.url()).await.unwrap();
    let keys = client.keys().clone();
    for (case, stop_after_push) in [("take", false), ("push", true)] {
        let chain = gator_core::Chain::new()
            .then(ChainStep::call(format!("{case}-1")).queue(a.as_str()))
            .then(ChainStep::call(format!("{case}-2")).queue(b.as_str()));
        let chain_id = chain.through(&client).dispatch().await.unwrap();
        let first: serde_json::Value =
            serde_json::from_str(&cluster.cli(&["LPOP", &format!("gator:{{{a}}}:queue")]))
                .expect("the first step");
        let link = first["chain"].clone();
        let next_jid = link["next_jid"].as_str().expect("a next step").to_owned();
        assert_eq!(link["id"], chain_id.as_str());
        // The first half of a success: the hand-off recorded in the first queue's outbox.
        let record = link.to_string();
        cluster.cli(&["RPUSH", &format!("gator:{{{a}}}:outbox"), &record]);
        // The crash: after the take (and, in the second case, after the push too).
        let mut conn = client.connection();
        let step: Option<String> = scripts::CHAIN_TAKE
            .key(keys.chain(&a, &chain_id))
            .key(keys.handoff(&a))
            .arg(&next_jid)
            .invoke_async(&mut conn)
            .await
            .unwrap();
        let step = step.expect("the next step was at the head of its chain's list");
        if stop_after_push {
            let pushed: i64 = scripts::CHAIN_PUSH
                .key(keys.handed(&b, &next_jid))
                .key(keys.queue(&b))
                .arg(&step)
                .arg(60_000)
                .invoke_async(&mut conn)
                .await
                .unwrap();
            assert_eq!(pushed, 1);
        }
        // Recovery: two drains at once, then one more.
        let drains = |_| Recovery::new(client.connection(), &keys, None);
        let (mut d1, mut d2) = (drains(1), drains(2));
        let (r1, r2) = tokio::join!(d1.drain_outbox(&a), d2.drain_outbox(&a));
        r1.unwrap();
        r2.unwrap();
        drains(3).drain_outbox(&a).await.unwrap();

        let queued = cluster.cli(&["LRANGE", &format!("gator:{{{b}}}:queue"), "0", "-1"]);
        assert_eq!(
            queued.matches(&next_jid).count(),
            1,
            "{case}: the next step is on its queue exactly once: {queued}"
        );
        assert_eq!(
            cluster.cli(&["LLEN", &format!("gator:{{{a}}}:outbox")]),
            "0"
        );
        assert_eq!(
            cluster.cli(&["HLEN", &format!("gator:{{{a}}}:handoff")]),
            "0"
        );
        assert_eq!(
            cluster.cli(&["EXISTS", &format!("gator:{{{a}}}:chain:{chain_id}")]),
            "0"
        );
        cluster.cli(&["DEL", &format!("gator:{{{b}}}:queue")]);
    }
}

const WORKER_BIN: &str = env!("CARGO_BIN_EXE_gator-test-worker");

#[test]
fn the_cli_lists_and_retries_dead_jobs_on_queues_of_every_master() {
    let cluster = RedisCluster::start(3, 0);
    let (a, b) = queues_on_two_masters(&cluster);
    for (queue, jid) in [(&a, "dead-a"), (&b, "dead-b")] {
        let payload = serde_json::json!({
            "jid": jid, "job": "chain_step", "args": ["d"], "queue": queue,
            "created_at": 1, "enqueued_at": 1, "attempt": 25, "error": "boom"
        });
        cluster.cli(&[
            "ZADD",
            &format!("gator:{{{queue}}}:dead"),
            "1",
            &payload.to_string(),
        ]);
        cluster.cli(&["SADD", "gator:queues", queue]);
    }
    let cli = |args: &[&str], url: &str, seed: bool| {
        let mut command = std::process::Command::new(WORKER_BIN);
        command.args(args).args(["--redis-url", url]);
        if seed {
            command.arg("--redis-cluster");
        }
        let out = command.output().expect("run the CLI");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    };
    let listed = cli(&["dead", "list"], &cluster.url(), false);
    assert!(
        listed.contains("dead-a") && listed.contains("dead-b"),
        "{listed}"
    );
    let listed = cli(&["dead", "list"], &cluster.seed_url(), true);
    assert!(
        listed.contains("dead-a") && listed.contains("dead-b"),
        "a seed finds every node: {listed}"
    );

    cli(&["dead", "retry", "--all"], &cluster.url(), false);
    for queue in [&a, &b] {
        assert_eq!(
            cluster.cli(&["ZCARD", &format!("gator:{{{queue}}}:dead")]),
            "0"
        );
        assert_eq!(
            cluster.cli(&["LLEN", &format!("gator:{{{queue}}}:queue")]),
            "1"
        );
    }
}

/// The test worker binary's `count_run`, named here so the test can dispatch typed chains of
/// it (`HINCRBY test:runs <id> 1` on the worker's default client).
#[gator_core::job(name = "count_run")]
async fn count_run_remote(id: u64) {
    let _ = id;
}

/// Worker processes SIGKILLed over and over while chains whose steps alternate between two
/// masters run: every step of every chain still runs, and no hand-off is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chains_across_masters_survive_workers_killed_between_a_step_and_its_hand_off() {
    let cluster = RedisCluster::start(3, 0);
    let (a, b) = queues_on_two_masters(&cluster);
    let client = gator_core::Client::connect(&cluster.url()).await.unwrap();
    let chains = 150u64;
    let steps = 4u64;
    for c in 0..chains {
        let mut chain = gator_core::Chain::new();
        for s in 0..steps {
            let queue = if s % 2 == 0 { a.as_str() } else { b.as_str() };
            chain = chain.then(CountRunRemote::call(c * 10 + s).queue(queue));
        }
        chain.through(&client).dispatch().await.unwrap();
    }
    let queues = format!("{a},{b}");
    let url = cluster.url();
    let spawn =
        || gator_tests::spawn_worker_process_with(WORKER_BIN, &url, &queues, 4, &["--lease", "4s"]);
    let mut workers = [spawn(), spawn()];
    // Kill one worker and start another every 150 ms for 3 s: some die between a step's ack
    // and its hand-off.
    for round in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(150));
        let victim = round % workers.len();
        let _ = workers[victim].kill();
        let _ = workers[victim].wait();
        workers[victim] = spawn();
    }
    let total = chains * steps;
    gator_tests::wait_until(
        "every step of every chain to run",
        std::time::Duration::from_secs(60),
        || async { cluster.cli(&["HLEN", "test:runs"]) == total.to_string() },
    )
    .await;
    for c in 0..chains {
        for s in 0..steps {
            let runs = cluster.cli(&["HGET", "test:runs", &(c * 10 + s).to_string()]);
            assert!(
                runs.parse::<u64>().unwrap_or(0) >= 1,
                "step {s} of chain {c} never ran"
            );
        }
    }
    for queue in [&a, &b] {
        gator_tests::wait_until(
            "the outboxes to drain",
            std::time::Duration::from_secs(20),
            || async {
                cluster.cli(&["LLEN", &format!("gator:{{{queue}}}:outbox")]) == "0"
                    && cluster.cli(&["HLEN", &format!("gator:{{{queue}}}:handoff")]) == "0"
            },
        )
        .await;
    }
    assert_eq!(
        cluster.cli(&["EXISTS", &format!("gator:{{{a}}}:queue")]),
        "0"
    );
    assert_eq!(
        cluster.cli(&["EXISTS", &format!("gator:{{{b}}}:queue")]),
        "0"
    );
}

static RAN_TLS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

#[gator_core::job]
async fn on_tls_cluster(tag: String) {
    RAN_TLS.lock().unwrap().push(tag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_reaches_every_master_of_a_tls_cluster_from_a_node_list_or_a_seed() {
    let cluster = RedisCluster::start_tls(3, 0);
    let ca = cluster.certs().ca();
    // The node list: every node's TLS URL.
    let client = gator_core::Client::builder(cluster.tls_url())
        .ca_cert(&ca)
        .connect()
        .await
        .expect("a TLS client of the cluster from its nodes' URLs");
    assert!(client.is_cluster());
    for queue in QUEUES {
        OnTlsCluster::call(format!("tls-{queue}"))
            .queue(queue)
            .through(&client)
            .dispatch()
            .await
            .unwrap_or_else(|e| panic!("dispatch to {queue} over TLS: {e}"));
    }
    // The seed: one TLS URL with `.cluster(true)`; the other nodes are found over TLS.
    let seed = cluster.tls_url().split(',').next().unwrap().to_owned();
    let worker = gator_worker::Worker::builder()
        .redis_url(seed.clone())
        .cluster(true)
        .ca_cert(&ca)
        .queues(&QUEUES.join(","))
        .poll_interval(std::time::Duration::from_millis(50))
        .jobs(["on_tls_cluster"])
        .build()
        .expect("a valid worker");
    run_until_each_queue_ran_once(worker, &RAN_TLS, "tls").await;
    // A CA that signed no node's certificate: refused.
    let refused = gator_core::Client::builder(seed)
        .cluster(true)
        .ca_cert(cluster.certs().other_ca())
        .connect()
        .await;
    assert!(refused.is_err(), "a wrong CA was accepted");
}
