//! Expiring jobs, finished (issue 35, part 3): the deadline is judged and the job settled or
//! started in one script on Redis's clock; dispatches by name (HTTP, CLI) get the job's own
//! `expires_in` from the catalogue; an expired chain or workflow step stops its chain or
//! workflow; an operator's retry from the dead set runs the job without its deadline. And the
//! HTTP API's and CLI's explicit fair key (part 2). Every job runs in real worker processes
//! (the test worker binary), against a real redis-server.

#[path = "support/router.rs"]
mod router;
use gator_core::workflow::{OnFailure, Step, StepState, WorkflowState};
use gator_core::{Admin, Chain, Client, JobStatus, SetKind, Workflow, job};
use gator_tests::{
    RedisServer, WorkerProcess, client, run_cli, spawn_worker_process_with, wait_until,
};
use serde_json::{Value, json};
use std::time::Duration;

const WORKER: &str = env!("CARGO_BIN_EXE_gator-test-worker");

// The worker binary runs these; here they give typed calls with the same wire names.

/// Records its start on Redis's clock in `test:started_at` under `id`.
#[job(name = "note_time", expires_in = "1s")]
async fn note_time(_id: u64) {}

/// Records its context's start and its own status record in `test:judged` under `id`.
#[job(name = "note_start")]
async fn note_start(_id: u64) {}

/// Counts its run in `test:runs` (no deadline).
#[job(name = "count_run")]
async fn count_run(_id: u64) {}

/// Counts its run in `test:runs`, then sleeps.
#[job(name = "sleepy")]
async fn sleepy(_id: u64, _millis: u64) {}

fn worker(redis: &RedisServer, queues: &str) -> WorkerProcess {
    spawn_worker_process_with(
        WORKER,
        &redis.url(),
        queues,
        2,
        &["--poll-interval", "200ms"],
    )
}

fn started(redis: &RedisServer, id: u64) -> bool {
    redis.cli(&["HEXISTS", "test:started_at", &id.to_string()]) == "1"
}

fn runs(redis: &RedisServer, id: u64) -> String {
    redis.cli(&["HGET", "test:runs", &id.to_string()])
}

async fn wait_for_state(client: &Client, jid: &str, state: &str) -> JobStatus {
    wait_until(
        &format!("{jid} {state}"),
        Duration::from_secs(20),
        || async { client.status(jid).await.unwrap().name() == state },
    )
    .await;
    client.status(jid).await.unwrap()
}

/// The payload at the head of `queue`'s list.
fn queued(redis: &RedisServer, queue: &str) -> Value {
    let raw = redis.cli(&["LINDEX", &format!("gator:{{{queue}}}:queue"), "0"]);
    serde_json::from_str(&raw).unwrap_or_else(|e| panic!("a payload on {queue} ({e}): {raw}"))
}

/// A job with a deadline is judged on Redis's clock and, in time, recorded `running` by the
/// same script: its context's `started_at` is that instant (before the deadline), and its own
/// status record already says `running` since then when its body's first line reads it.
/// A job without a deadline pays nothing: no clock read, no record at its start (`queued`
/// until it has run 100 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_a_deadline_is_judged_and_recorded_running_in_one_step_on_redis_time() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let before = client.redis_time().await.unwrap();
    NoteStart::call(1)
        .expires_in(Duration::from_secs(30))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let deadline = queued(&redis, "default")["expires_at"]
        .as_u64()
        .expect("a deadline");
    NoteStart::call(2)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let _worker = worker(&redis, "default");
    wait_until("both jobs noted", Duration::from_secs(10), || async {
        redis.cli(&["HLEN", "test:judged"]) == "2"
    })
    .await;
    let judged = redis.cli(&["HGET", "test:judged", "1"]);
    let fields: Vec<&str> = judged.split(' ').collect();
    let start: u64 = fields[0].parse().unwrap_or_else(|_| panic!("{judged}"));
    assert!(
        before <= start && start < deadline,
        "{before} {judged} {deadline}"
    );
    // Recorded running by the script that judged it, since the very instant it was judged.
    assert_eq!(fields[1..], ["running", fields[0]], "{judged}");
    assert_eq!(redis.cli(&["HGET", "test:judged", "2"]), "- queued -");
}

/// A job dispatched by name, over HTTP or the command line, gets the `expires_in` and
/// `on_expire` of its `#[job]` from the catalogue, as a typed dispatch does; a value the
/// request gives wins. It then expires like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispatches_by_name_get_the_jobs_expires_in_from_the_catalogue_unless_they_give_one() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _worker = worker(&redis, "default");
    wait_until("the catalogue", Duration::from_secs(10), || async {
        client
            .catalogue_entry("note_time_expiring")
            .await
            .unwrap()
            .is_some()
    })
    .await;
    let known = client.catalogue_entry("note_time_expiring").await.unwrap();
    let definition = known.expect("published").definition;
    assert_eq!(definition.expires_in_ms, Some(1000));
    assert_eq!(definition.on_expire, gator_core::expiry::OnExpire::Drop);
    let listed = run_cli(WORKER, &redis.url(), &["jobs"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("expires_in=1.0s") && listed.contains("on_expire=drop"),
        "{listed}"
    );

    // The command line: the job's own 1 s, dropped once expired.
    let before = client.redis_time().await.unwrap();
    let out = run_cli(
        WORKER,
        &redis.url(),
        &["enqueue", "note_time_expiring", "[41]", "--queue", "later"],
    );
    assert!(out.status.success(), "{out:?}");
    let after = client.redis_time().await.unwrap();
    let payload = queued(&redis, "later");
    let deadline = payload["expires_at"].as_u64().expect("a deadline");
    assert!(
        (before + 1000..=after + 1000).contains(&deadline),
        "{payload}"
    );
    assert_eq!(payload["on_expire"], "drop", "{payload}");
    let jid = payload["jid"].as_str().unwrap().to_owned();

    // HTTP: the job's own; then the request's `expires_in` (its `on_expire` still the job's);
    // then both the request's.
    let app = gator_web::router(
        client.clone(),
        gator_web::WebConfig::new().auth_token(router::TOKEN),
    );
    let body = |queue: &str, extra: Value| {
        let mut body = json!({"job": "note_time_expiring", "args": [42], "queue": queue});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let now = client.redis_time().await.unwrap();
    for (queue, extra, ttl, on_expire) in [
        ("h1", json!({}), 1000, json!("drop")),
        ("h2", json!({"expires_in": "1h"}), 3_600_000, json!("drop")),
        (
            "h3",
            json!({"expires_in": "1h", "on_expire": "dead"}),
            3_600_000,
            Value::Null,
        ),
    ] {
        let (status, answer) =
            router::call(&app, "POST", "/api/jobs", Some(body(queue, extra))).await;
        assert_eq!(status, 201, "{answer}");
        let payload = queued(&redis, queue);
        let deadline = payload["expires_at"].as_u64().expect("a deadline");
        assert!(
            deadline >= now + ttl && deadline < now + ttl + 10_000,
            "{queue}: {payload}"
        );
        assert_eq!(payload["on_expire"], on_expire, "{queue}: {payload}");
    }

    // The dashboard's Jobs page lists the job's deadline among its options.
    let (status, page) = router::call(&app, "GET", "/assets/jobs.js", None).await;
    assert_eq!(status, 200);
    assert!(
        page.to_string()
            .contains("expires_in=${duration(def.expires_in_ms)}")
    );

    // Past its deadline, a worker on its queue drops it unrun.
    wait_until("past the deadline", Duration::from_secs(10), || async {
        client.redis_time().await.unwrap() > deadline
    })
    .await;
    let _late = worker(&redis, "later");
    let status = wait_for_state(&client, &jid, "expired").await;
    assert!(
        matches!(status, JobStatus::Expired { kept: false, .. }),
        "{status:?}"
    );
    assert!(!started(&redis, 41));
}

/// An expired chain step stops its chain as a dead step does: the steps after it wait. An
/// operator's retry from the dead set runs it without its (past) deadline, and the chain goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_chain_step_stops_its_chain_and_an_operators_retry_runs_it_and_the_rest() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _worker = worker(&redis, "default");
    // The second step's deadline counts from the chain's dispatch: 1 s, and the first step
    // runs 1.5 s.
    Chain::new()
        .then(Sleepy::call(50, 1500))
        .then(NoteTime::call(51))
        .then(CountRun::call(52))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    wait_until("the expired step", Duration::from_secs(20), || async {
        redis.cli(&["ZCARD", "gator:{default}:dead"]) == "1"
    })
    .await;
    let dead = redis.zset_json("gator:{default}:dead").await;
    assert_eq!(dead[0]["error"], "expired: not started by its deadline");
    let jid = dead[0]["jid"].as_str().unwrap().to_owned();
    assert!(matches!(
        client.status(&jid).await.unwrap(),
        JobStatus::Expired { kept: true, .. }
    ));
    assert!(!started(&redis, 51));
    assert_eq!(
        runs(&redis, 52),
        "",
        "the chain stopped at the expired step"
    );

    let admin = Admin::new(client.clone());
    assert!(
        admin
            .run_now(SetKind::Dead, Some("default"), &jid)
            .await
            .unwrap()
    );
    wait_until("the rest of the chain", Duration::from_secs(20), || async {
        runs(&redis, 52) == "1"
    })
    .await;
    assert!(
        started(&redis, 51),
        "the retried step ran, past its old deadline"
    );
    assert_eq!(client.status(&jid).await.unwrap().name(), "done");
}

/// An expired workflow step ends as a dead step does: with `OnFailure::Halt` (the default)
/// its workflow halts, its later steps waiting; with `OnFailure::Fail` the workflow fails and
/// its later steps are cancelled. The step's own status says `expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_workflow_step_halts_or_fails_its_workflow_as_a_dead_step_does() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let _worker = worker(&redis, "default");
    let halted = Workflow::new()
        .then(Sleepy::call(60, 1500))
        .then(NoteTime::call(61))
        .then(CountRun::call(62))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let failed = Workflow::new()
        .then(Sleepy::call(70, 1500))
        .then(Step::new(NoteTime::call(71)).on_failure(OnFailure::Fail))
        .then(CountRun::call(72))
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    for (id, state) in [
        (&halted, WorkflowState::Halted),
        (&failed, WorkflowState::Failed),
    ] {
        wait_until(
            &format!("{id} {state:?}"),
            Duration::from_secs(20),
            || async { client.workflow_status(id).await.unwrap().unwrap().state == state },
        )
        .await;
        let status = client.workflow_status(id).await.unwrap().unwrap();
        assert!(
            matches!(
                status.steps[1].state,
                StepState::Job(JobStatus::Expired { .. })
            ),
            "{status:?}"
        );
        let after = &status.steps[2].state;
        match state {
            WorkflowState::Halted => assert_eq!(*after, StepState::Waiting, "{status:?}"),
            _ => assert_eq!(*after, StepState::Cancelled, "{status:?}"),
        }
    }
    assert!(!started(&redis, 61) && !started(&redis, 71));
    assert_eq!(
        (runs(&redis, 62), runs(&redis, 72)),
        (String::new(), String::new())
    );
}

/// The payload of `jid` wherever `queue`'s slot keeps it (its list, a parking set, ...): where
/// a job with flow options waits.
async fn stored_payload(redis: &RedisServer, queue: &str, jid: &str) -> Value {
    let mut conn = redis.client().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("gator:{{{queue}}}:*"))
        .query_async(&mut conn)
        .await
        .unwrap();
    for key in &keys {
        let kind: String = redis::cmd("TYPE")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let mut read = match kind.as_str() {
            "list" | "zset" => redis::cmd(if kind == "list" { "LRANGE" } else { "ZRANGE" }),
            "hash" => redis::cmd("HVALS"),
            _ => continue,
        };
        read.arg(key);
        if kind != "hash" {
            read.arg(0).arg(-1);
        }
        let values: Vec<String> = read.query_async(&mut conn).await.unwrap();
        for value in values.iter().filter(|v| v.contains(jid)) {
            // A parking set's member is the payload after a 16-digit sequence number.
            let text = value.trim_start_matches(|c: char| c.is_ascii_digit());
            if let Ok(payload) = serde_json::from_str::<Value>(text)
                && payload["jid"] == jid
            {
                return payload;
            }
        }
    }
    panic!("no payload of {jid} in {queue}'s slot: {keys:?}");
}

/// `"fair_key"` in the HTTP enqueue body and `enqueue --fair-key` give a dispatch by name its
/// fair key, over the one the job takes from an argument (`#[job(fair_key = tenant)]`, from
/// the catalogue); bounded as `.fair_key()` is (1 to 128 bytes that show as themselves).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_fair_key_over_http_or_the_cli_wins_over_the_catalogues_argument() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let _worker = worker(&redis, "default");
    wait_until("the catalogue", Duration::from_secs(10), || async {
        client.catalogue_entry("fair_note").await.unwrap().is_some()
    })
    .await;
    let app = gator_web::router(
        client.clone(),
        gator_web::WebConfig::new().auth_token(router::TOKEN),
    );
    let post = |body: Value| router::call(&app, "POST", "/api/jobs", Some(body));
    let base = json!({"job": "fair_note", "args": ["acme", 1], "queue": "fq"});
    for (extra, fair) in [(json!({}), "acme"), (json!({"fair_key": "vip"}), "vip")] {
        let mut body = base.clone();
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let (status, answer) = post(body).await;
        assert_eq!(status, 201, "{answer}");
        let payload = stored_payload(&redis, "fq", answer["jid"].as_str().unwrap()).await;
        assert_eq!(payload["flow"]["fair"], fair, "{payload}");
    }
    for bad in ["x".repeat(129), "a\u{7}b".to_owned(), String::new()] {
        let mut body = base.clone();
        body["fair_key"] = json!(bad);
        let (status, answer) = post(body).await;
        assert_eq!(status, 400, "{bad:?}: {answer}");
        assert!(answer.to_string().contains("fair key"), "{answer}");
    }
    let out = run_cli(
        WORKER,
        &redis.url(),
        &[
            "enqueue",
            "fair_note",
            r#"["acme", 2]"#,
            "--queue",
            "fq",
            "--fair-key",
            "cli",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let jid = text.trim().rsplit(' ').next().expect("a jid");
    assert_eq!(
        stored_payload(&redis, "fq", jid).await["flow"]["fair"],
        "cli"
    );
    // It runs, fair key and all.
    let _fq = worker(&redis, "fq");
    wait_for_state(&client, jid, "done").await;
}
