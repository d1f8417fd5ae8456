//! Large payloads stored aside (`gator_core::payload::aside`): the arguments in a key of their
//! own, `gator:{large}:payload:<jid>`, written with the job, fetched with it, and gone with it.
//! Every test ends with no side key left.

use super::*;
use gator_core::SetKind;

/// Every side key, on every node.
fn side_keys(redis: &RedisServer) -> Vec<String> {
    redis
        .cli(&["KEYS", "*:payload:*"])
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn side_key(jid: &str) -> String {
    format!("gator:{{large}}:payload:{jid}")
}

/// Redis's clock, in ms.
fn redis_ms(redis: &RedisServer) -> u64 {
    let time = redis.cli(&["TIME"]);
    let mut parts = time.lines().map(|p| p.trim().parse::<u64>().unwrap());
    parts.next().unwrap() * 1000 + parts.next().unwrap() / 1000
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_job_goes_aside_runs_with_the_same_args_and_its_key_goes_with_its_success() {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let eager = Client::builder(redis.url())
        .max_payload(4 << 20)
        .aside_over(16 * 1024)
        .connect()
        .await
        .unwrap();
    let (noisy, text, small) = (noise(1 << 20), prose(1 << 20), prose(1024));
    let jid = KeepBlob::call(21, noisy.clone(), false, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    KeepBlob::call(22, text.clone(), false, 0)
        .through(&eager)
        .dispatch()
        .await
        .unwrap();
    KeepBlob::call(23, small.clone(), false, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let stored = stored(&redis).await;
    // 1 MiB of noise, over 256 KiB: its entry is a marker, its key holds the arguments.
    assert!(stored[0].len() < 1024, "{} bytes stored", stored[0].len());
    let marker: Value = serde_json::from_str(&stored[0]).unwrap();
    assert_eq!(marker["args"], Value::Null);
    assert_eq!(marker["packed"]["aside"], true);
    assert_eq!(marker["packed"]["codec"], "none");
    assert!(marker["packed"].get("data").is_none());
    let len: usize = redis.cli(&["STRLEN", &side_key(&jid)]).parse().unwrap();
    assert!(len > 1 << 20, "{len} bytes aside");
    // 1 MiB of prose over a 16 KiB threshold: compressed, then aside.
    let packed: Value = serde_json::from_str(&stored[1]).unwrap();
    assert_eq!(packed["packed"]["codec"], "zstd");
    assert_eq!(packed["packed"]["aside"], true);
    assert!(!stored[2].contains("\"packed\""), "1 KiB stays as it was");
    assert_eq!(side_keys(&redis).len(), 2);

    let mut worker = worker(&redis, &[]);
    wait_for_blobs(&redis, &[21, 22, 23]).await;
    for (id, blob) in [(21, &noisy), (22, &text), (23, &small)] {
        assert_eq!(blob_of(&redis, id).await.as_deref(), Some(blob.as_str()));
    }
    wait_until("no side key left", Duration::from_secs(10), || async {
        side_keys(&redis).is_empty()
    })
    .await;
    assert!(terminate(&mut worker).success());
    assert_eq!(redis.cli(&["LLEN", "gator:{large}:queue"]), "0");
    assert_eq!(redis.cli(&["ZCARD", "gator:{large}:dead"]), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_jobs_dispatched_aside_at_once_each_have_their_key_and_clearing_the_queue_deletes_them()
 {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let jobs = (0..20).map(|id| KeepBlob::call(100 + id, noise(300 * 1024), false, 0));
    let jids = client.dispatch_many(jobs).await.unwrap();
    let stored = stored(&redis).await;
    assert_eq!(stored.len(), 20);
    let mut keys = side_keys(&redis);
    keys.sort();
    let mut expected: Vec<String> = jids.iter().map(|j| side_key(j)).collect();
    expected.sort();
    assert_eq!(keys, expected, "one key per job, and no other");
    assert!(stored.iter().all(|s| s.contains("\"aside\":true")));

    let admin = Admin::new(client.clone());
    assert_eq!(admin.clear_queue("large").await.unwrap(), 20);
    assert!(side_keys(&redis).is_empty(), "{:?}", side_keys(&redis));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_aside_job_keeps_its_key_runs_again_with_its_args_and_deleting_it_deletes_the_key() {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let blob = format!("needle-aside {}", noise(512 * 1024));
    let jid = KeepBlob::call(31, blob.clone(), true, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let mut first = worker(&redis, &[]);
    wait_until("the job is dead", Duration::from_secs(30), || async {
        redis.cli(&["ZCARD", "gator:{large}:dead"]) == "1"
    })
    .await;
    assert!(terminate(&mut first).success());
    let dead = redis.zset_json("gator:{large}:dead").await;
    assert_eq!(
        dead[0]["packed"]["aside"], true,
        "the dead entry is its marker"
    );
    assert!(dead[0]["attempt"].as_u64().unwrap() >= 1, "retried first");
    assert_eq!(blob_of(&redis, 31).await.as_deref(), Some(blob.as_str()));
    assert_eq!(
        side_keys(&redis),
        vec![side_key(&jid)],
        "kept with the dead job"
    );

    // Readers see the arguments: search (within its side-key budget), `job show`, the API.
    let admin = Admin::new(client.clone());
    let mut query = SearchQuery::new("needle-aside");
    query.places = vec![Place::Dead];
    let page = admin.search(&query).await.unwrap();
    assert_eq!(
        page.hits.len(),
        1,
        "found inside the arguments stored aside"
    );
    assert!(page.hits[0].args.to_string().contains("needle-aside"));
    let mut out = Vec::new();
    gator_worker::cli::AdminCommand::Job {
        action: gator_worker::cli::job::JobAction::Show {
            jid: jid.clone(),
            json: true,
        },
    }
    .run(&admin, &mut out)
    .await
    .unwrap();
    let shown: Value = serde_json::from_slice(&out).unwrap();
    assert!(
        shown["args"].to_string().contains("needle-aside"),
        "{shown}"
    );
    assert!(
        shown["packed"]
            .as_str()
            .unwrap()
            .starts_with("stored aside")
    );
    let config = gator_web::WebConfig::new().auth_token("t0ken-for-the-aside-tests");
    let response = gator_web::router(client.clone(), config)
        .oneshot(
            Request::get(format!("/api/jobs/{jid}?full=true"))
                .header("authorization", "Bearer t0ken-for-the-aside-tests")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = axum::body::to_bytes(response.into_body(), 8 << 20)
        .await
        .unwrap();
    let view: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(view["payload"]["args"][1].as_str(), Some(blob.as_str()));
    assert_eq!(view["packed"]["aside"], true);
    assert!(view["packed"]["stored"].as_u64().unwrap() > 512 * 1024);

    // Run again from the dead set (its queue's list, same slot): it runs with its arguments.
    redis.cli(&["DEL", "test:blob:31"]);
    assert!(
        admin
            .run_now(SetKind::Dead, Some("large"), &jid)
            .await
            .unwrap()
    );
    let mut second = worker(&redis, &[]);
    wait_for_blobs(&redis, &[31]).await;
    assert_eq!(blob_of(&redis, 31).await.as_deref(), Some(blob.as_str()));
    wait_until("dead again", Duration::from_secs(30), || async {
        redis.cli(&["ZCARD", "gator:{large}:dead"]) == "1"
    })
    .await;
    assert!(terminate(&mut second).success());
    assert_eq!(side_keys(&redis), vec![side_key(&jid)]);

    assert!(
        admin
            .delete_job(SetKind::Dead, Some("large"), &jid)
            .await
            .unwrap()
    );
    assert!(side_keys(&redis).is_empty(), "{:?}", side_keys(&redis));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aside_job_whose_worker_is_killed_runs_again_with_its_args() {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let blob = noise(512 * 1024);
    KeepBlob::call(9, blob.clone(), false, 2000)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(side_keys(&redis).len(), 1);
    let id = ["--worker-id", "pod-aside", "--lease", "120s"];
    let mut first = worker(&redis, &id);
    wait_until("the job started", Duration::from_secs(20), || async {
        redis.cli(&["GET", "test:started:9"]) == "1"
    })
    .await;
    first.kill().unwrap(); // SIGKILL: the job stays in flight
    first.wait().unwrap();
    assert_eq!(blob_of(&redis, 9).await, None);
    let mut restarted = worker(&redis, &id);
    wait_for_blobs(&redis, &[9]).await;
    assert_eq!(blob_of(&redis, 9).await.as_deref(), Some(blob.as_str()));
    wait_until("no side key left", Duration::from_secs(10), || async {
        side_keys(&redis).is_empty()
    })
    .await;
    assert!(terminate(&mut restarted).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_and_expired_dropped_aside_jobs_lose_their_keys() {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let cancelled = KeepBlob::call(41, noise(300 * 1024), false, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(side_keys(&redis).len(), 1);
    client.cancel(&cancelled).await.unwrap();
    assert!(side_keys(&redis).is_empty(), "cancelled while queued");

    let expiring = KeepBlob::call(42, noise(300 * 1024), false, 0)
        .expires_in(Duration::from_millis(200))
        .on_expire(gator_core::expiry::OnExpire::Drop)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    assert_eq!(side_keys(&redis).len(), 1);
    let marker: Value = serde_json::from_str(&stored(&redis).await[0]).unwrap();
    let deadline = marker["expires_at"].as_u64().unwrap();
    wait_until("the deadline passed", Duration::from_secs(5), || async {
        redis_ms(&redis) > deadline
    })
    .await;
    let mut worker = worker(&redis, &[]);
    wait_until("the job expired", Duration::from_secs(20), || async {
        client.status(&expiring).await.unwrap().name() == "expired"
    })
    .await;
    assert!(terminate(&mut worker).success());
    assert_eq!(blob_of(&redis, 42).await, None, "it never ran");
    assert!(side_keys(&redis).is_empty(), "{:?}", side_keys(&redis));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_aside_job_trimmed_from_the_dead_set_loses_its_key() {
    let redis = RedisServer::start();
    let client = big_client(&redis).await;
    let mut worker = worker(&redis, &["--dead-max-jobs", "1"]);
    let first = KeepBlob::call(51, noise(300 * 1024), true, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let dead = |jid: String| {
        let client = client.clone();
        async move { client.status(&jid).await.unwrap().name() == "dead" }
    };
    wait_until("the first job is dead", Duration::from_secs(30), || {
        dead(first.clone())
    })
    .await;
    assert_eq!(side_keys(&redis), vec![side_key(&first)]);
    let second = KeepBlob::call(52, noise(300 * 1024), true, 0)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the second job is dead", Duration::from_secs(30), || {
        dead(second.clone())
    })
    .await;
    assert!(terminate(&mut worker).success());
    // The set keeps one entry: the first went, with its key.
    assert_eq!(redis.cli(&["ZCARD", "gator:{large}:dead"]), "1");
    assert_eq!(side_keys(&redis), vec![side_key(&second)]);
    let admin = Admin::new(client.clone());
    assert_eq!(
        admin.clear_set(SetKind::Dead, Some("large")).await.unwrap(),
        1
    );
    assert!(side_keys(&redis).is_empty(), "{:?}", side_keys(&redis));
}
