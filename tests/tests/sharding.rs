//! Sharded queues on one server: a queue split into shards (`hot#0` … `hot#N-1`) takes jobs
//! by shard key or in turn, keeps one key's jobs in order, is served as one queue (strict place
//! and weight), and loses nothing when its shard count changes. (The cluster suite runs a
//! sharded queue spread over three masters.)

use gator_core::job;
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::collections::HashMap;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

/// What ran, in start order: (queue as the job saw it, shard list, key, sequence number).
static RAN: Mutex<Vec<(String, String, String, u32)>> = Mutex::new(Vec::new());

fn ran_in(queue: &str) -> Vec<(String, String, String, u32)> {
    RAN.lock()
        .unwrap()
        .iter()
        .filter(|r| r.0 == queue)
        .cloned()
        .collect()
}

#[job(queue = "hot")]
async fn record(ctx: gator_core::Context, key: String, seq: u32) {
    RAN.lock().unwrap().push((
        ctx.queue().to_owned(),
        ctx.shard_queue().to_owned(),
        key,
        seq,
    ));
}

fn llen(redis: &RedisServer, list: &str) -> usize {
    redis
        .cli(&["LLEN", &format!("gator:{{{list}}}:queue")])
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_without_a_key_spread_evenly_and_one_keys_jobs_share_a_shard_and_keep_their_order() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_core::Admin::new(client.clone())
        .set_shards("spread", 4)
        .await
        .unwrap();
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .shard_counts()
            .await
            .unwrap()["spread"],
        4
    );
    client
        .dispatch_many((0..400).map(|i| Record::call("none".into(), i).queue("spread")))
        .await
        .unwrap();
    for shard in 0..4 {
        assert_eq!(
            llen(&redis, &format!("spread#{shard}")),
            100,
            "shard {shard}"
        );
    }
    assert_eq!(llen(&redis, "spread"), 0, "nothing on the unsharded list");
    // Keyed: 6 keys × 30 jobs, sent interleaved, one at a time.
    for seq in 0..30 {
        for key in 0..6 {
            Record::call(format!("user-{key}"), seq)
                .queue("spread")
                .shard_key(format!("user-{key}"))
                .through(&client)
                .dispatch()
                .await
                .unwrap();
        }
    }
    // One processor: start order is the order of the lists.
    let worker = TestWorker::start(&redis.url(), Some("spread"), 1);
    wait_until("every job to run", Duration::from_secs(30), || async {
        ran_in("spread").len() == 580
    })
    .await;
    worker.stop().await;
    let ran = ran_in("spread");
    let mut shard_of_key: HashMap<String, String> = HashMap::new();
    let mut last_seq: HashMap<String, u32> = HashMap::new();
    for (_, shard, key, seq) in ran.iter().filter(|r| r.2 != "none") {
        assert!(shard.starts_with("spread#"), "{shard}");
        let first = shard_of_key
            .entry(key.clone())
            .or_insert_with(|| shard.clone());
        assert_eq!(first, shard, "{key} ran from two shards");
        if let Some(last) = last_seq.insert(key.clone(), *seq) {
            assert!(*seq > last, "{key}: job {seq} ran after job {last}");
        }
    }
    assert_eq!(last_seq.len(), 6);
    assert!(last_seq.values().all(|seq| *seq == 29));
    // The job sees its queue's name, not its shard's.
    assert!(ran.iter().all(|r| r.0 == "spread"));
    for shard in 0..4 {
        assert_eq!(llen(&redis, &format!("spread#{shard}")), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_queue_keeps_its_strict_place_and_its_weight_as_a_whole() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_core::Admin::new(client.clone())
        .set_shards("first", 8)
        .await
        .unwrap();
    for queue in ["first", "second"] {
        client
            .dispatch_many((0..100).map(|i| Record::call("k".into(), i).queue(queue)))
            .await
            .unwrap();
    }
    // Strict: every job of the sharded queue before any of the next queue.
    let worker = TestWorker::start(&redis.url(), Some("first,second"), 1);
    wait_until("every job to run", Duration::from_secs(30), || async {
        ran_in("first").len() + ran_in("second").len() == 200
    })
    .await;
    worker.stop().await;
    let order: Vec<String> = RAN
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.0 == "first" || r.0 == "second")
        .map(|r| r.0.clone())
        .collect();
    let first_second = order.iter().position(|q| q == "second").unwrap();
    assert_eq!(
        first_second, 100,
        "a job of `second` ran before `first` was empty"
    );

    // Weighted 1:1 with `wa` in 8 shards: half the runs each, not 8 in 9 for the shards.
    gator_core::Admin::new(client.clone())
        .set_shards("wa", 8)
        .await
        .unwrap();
    for queue in ["wa", "wb"] {
        client
            .dispatch_many((0..400).map(|i| Record::call("k".into(), i).queue(queue)))
            .await
            .unwrap();
    }
    let worker = TestWorker::start(&redis.url(), Some("wa:1,wb:1"), 1);
    wait_until("200 jobs to run", Duration::from_secs(30), || async {
        ran_in("wa").len() + ran_in("wb").len() >= 200
    })
    .await;
    worker.stop().await;
    let first_200: Vec<String> = RAN
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.0 == "wa" || r.0 == "wb")
        .take(200)
        .map(|r| r.0.clone())
        .collect();
    let share = first_200.iter().filter(|q| *q == "wa").count() as f64 / 200.0;
    // Expected 0.5 (σ ≈ 0.035); per-shard weights would give about 0.89.
    assert!(
        (0.35..=0.65).contains(&share),
        "the sharded queue got {share:.2} of the runs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changing_the_shard_count_strands_no_job() {
    let redis = RedisServer::start();
    // Each phase uses a fresh client: a client re-reads the count only every 5 s.
    client(&redis.url())
        .await
        .dispatch_many((0..50).map(|i| Record::call("plain".into(), i).queue("grow")))
        .await
        .unwrap();
    gator_core::Admin::new(client(&redis.url()).await)
        .set_shards("grow", 6)
        .await
        .unwrap();
    client(&redis.url())
        .await
        .dispatch_many((0..60).map(|i| Record::call("six".into(), i).queue("grow")))
        .await
        .unwrap();
    gator_core::Admin::new(client(&redis.url()).await)
        .set_shards("grow", 2)
        .await
        .unwrap();
    client(&redis.url())
        .await
        .dispatch_many((0..20).map(|i| Record::call("two".into(), i).queue("grow")))
        .await
        .unwrap();
    assert_eq!(llen(&redis, "grow"), 50);
    assert_eq!(
        llen(&redis, "grow#5"),
        10,
        "a shard beyond the new count keeps its jobs"
    );
    // A worker serving every known queue finds the queue and all its lists.
    let worker = TestWorker::start(&redis.url(), None, 4);
    wait_until("every job to run", Duration::from_secs(30), || async {
        ran_in("grow").len() == 130
    })
    .await;
    worker.stop().await;
    for list in ["grow", "grow#0", "grow#1", "grow#2", "grow#5"] {
        assert_eq!(llen(&redis, list), 0, "{list}");
    }
}

/// Fails every time, with no retries: straight to the dead set of its shard.
#[job(queue = "hot", retries = 0)]
async fn always_fails(_n: u32) -> Result<(), String> {
    Err("broken on purpose".into())
}

fn cli(redis: &RedisServer, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gator-test-worker"))
        .args(args)
        .env("GATOR_REDIS_URL", redis.url())
        .output()
        .expect("running the worker binary");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_sets_shard_counts_and_its_set_commands_cover_every_shard() {
    let redis = RedisServer::start();
    let (ok, out, err) = cli(&redis, &["shards", "mail", "3"]);
    assert!(ok, "{err}");
    assert!(out.contains("mail: 1 → 3 shards"), "{out}");
    let (_, out, _) = cli(&redis, &["shards"]);
    assert_eq!(out.trim(), "mail: 3 shards");
    let (ok, _, err) = cli(&redis, &["shards", "mail", "0"]);
    assert!(!ok && err.contains("invalid shard count 0"), "{err}");
    let (ok, _, err) = cli(&redis, &["shards", "ma#il", "2"]);
    assert!(!ok && err.contains("invalid queue name"), "{err}");

    let client = client(&redis.url()).await;
    client
        .dispatch_many((0..6).map(|i| AlwaysFails::call(i).queue("mail")))
        .await
        .unwrap();
    let worker = TestWorker::start(&redis.url(), Some("mail"), 2);
    wait_until("every job to die", Duration::from_secs(30), || async {
        (0..3)
            .map(|s| redis.cli(&["ZCARD", &format!("gator:{{mail#{s}}}:dead")]))
            .map(|n| n.parse::<usize>().unwrap())
            .sum::<usize>()
            == 6
    })
    .await;
    worker.stop().await;
    // `--queue mail` covers the shards' dead sets; one shard can be named alone.
    let (ok, out, err) = cli(&redis, &["dead", "list", "--queue", "mail"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("6 entries in the dead set of queue \"mail\""),
        "{out}"
    );
    let (_, out, _) = cli(&redis, &["dead", "list", "--queue", "mail#1"]);
    assert!(out.contains("2 entries"), "{out}");
    let (ok, out, _) = cli(&redis, &["dead", "retry", "--all", "--queue", "mail"]);
    assert!(ok && out.contains("moved 6 jobs"), "{out}");
    let queued: usize = (0..3).map(|s| llen(&redis, &format!("mail#{s}"))).sum();
    assert_eq!(queued, 6, "each job went back to its own shard");
    // Back to one list: new jobs go to `mail`, and the shards are still drained.
    let (ok, out, _) = cli(&redis, &["shards", "mail", "1"]);
    assert!(ok && out.contains("3 → 1"), "{out}");
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .shard_counts()
            .await
            .unwrap()
            .get("mail"),
        None
    );
}
