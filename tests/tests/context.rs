//! Jobs get their context and the application's state from a worker built in code, and a
//! worker that lacks a state one of its jobs needs refuses to start.

use gator_core::{Client, Context, State, job};
use gator_tests::{RedisServer, client, wait_until};
use gator_worker::{BuildError, CancellationToken, Worker, WorkerBuilder};
use redis::AsyncCommands;
use std::time::{Duration, SystemTime};

/// Where jobs report what they saw: a list in the test's own Redis, reached through state.
#[derive(Clone)]
struct Log(Client);

impl Log {
    async fn push(&self, line: String) {
        let mut conn = self.0.connection();
        let _: () = conn.rpush("ctx-test:log", line).await.expect("log a line");
    }
}

/// A second state type, to show that several are kept apart.
#[derive(Clone)]
struct Greeting(&'static str);

#[job(queue = "ctx", retries = 3, backoff = ["10ms"])]
async fn report(
    tag: String,
    ctx: Context,
    State(log): State<Log>,
    State(hi): State<Greeting>,
) -> Result<(), String> {
    let age = SystemTime::now()
        .duration_since(ctx.created_at())
        .map_err(|e| e.to_string())?;
    log.push(format!(
        "{tag} {hi} jid={} name={} queue={} attempt={} chain={:?} young={} enqueued_after_created={}",
        ctx.jid(),
        ctx.job_name(),
        ctx.queue(),
        ctx.attempt(),
        ctx.chain_id(),
        age < Duration::from_secs(60),
        ctx.enqueued_at() >= ctx.created_at(),
        hi = hi.0,
    ))
    .await;
    if ctx.attempt() < 2 {
        return Err("fails once on purpose".into());
    }
    Ok(())
}

/// A sync job that works until told to stop: at its timeout its context is cancelled.
#[job(queue = "ctx-slow", timeout = "300ms", retries = 0)]
fn sync_until_cancelled(ctx: Context, State(log): State<Log>) {
    while !ctx.is_cancelled() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the log write");
    rt.block_on(log.push(format!("sync {} saw its timeout", ctx.jid())));
}

/// An async job that waits for the worker's shutdown deadline, then stops cleanly.
#[job(queue = "ctx-slow")]
async fn wait_for_deadline(State(log): State<Log>, ctx: Context) {
    ctx.cancelled().await;
    log.push(format!("async {} saw the deadline", ctx.jid()))
        .await;
}

async fn log_lines(redis: &RedisServer) -> Vec<String> {
    redis
        .client()
        .await
        .lrange("ctx-test:log", 0, -1)
        .await
        .expect("read the log")
}

async fn wait_for_lines(redis: &RedisServer, what: &str, count: usize) -> Vec<String> {
    wait_until(what, Duration::from_secs(10), || async {
        log_lines(redis).await.len() >= count
    })
    .await;
    log_lines(redis).await
}

/// A worker on the test's Redis serving `queues`, whose jobs log through it.
fn worker_on(client: &Client, queues: &str) -> WorkerBuilder {
    Worker::builder()
        .client(client.clone())
        .queues(queues)
        .concurrency(2)
        .poll_interval(Duration::from_millis(50))
        .state(Log(client.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_sees_its_context_and_state_and_its_attempt_counts_from_one() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker_on(&client, "ctx")
        .state(Greeting("hello"))
        .jobs(["report"])
        .build()
        .expect("every state is given");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));

    let jid = Report::call("t1".into())
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    let lines = wait_for_lines(&redis, "both attempts", 2).await;
    stop.cancel();
    running.await.expect("join").expect("worker ran");

    let expected = |attempt: u32| {
        format!(
            "t1 hello jid={jid} name=report queue=ctx attempt={attempt} chain=None young=true enqueued_after_created=true"
        )
    };
    assert_eq!(lines, [expected(1), expected(2)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_step_knows_its_chain() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker_on(&client, "ctx")
        .state(Greeting("hi"))
        .jobs(["report"])
        .build()
        .expect("every state is given");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    let chain = gator_core::Chain::new()
        .then(Report::call("c1".into()))
        .then(Report::call("c2".into()));
    let chain_id = chain
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch a chain");
    // Each step fails once, then succeeds: four lines.
    let lines = wait_for_lines(&redis, "both steps, twice each", 4).await;
    stop.cancel();
    running.await.expect("join").expect("worker ran");
    let wanted = format!("chain=Some({chain_id:?})");
    assert!(
        lines.iter().all(|line| line.contains(&wanted)),
        "every step sees chain {chain_id}: {lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_cancels_a_sync_jobs_context_and_the_shutdown_deadline_an_async_ones() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = worker_on(&client, "ctx-slow")
        .shutdown_timeout(Duration::from_millis(300))
        .jobs(["sync_until_cancelled", "wait_for_deadline"])
        .build()
        .expect("every state is given");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));

    let sync = SyncUntilCancelled::call()
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    let lines = wait_for_lines(&redis, "the sync job's cancellation", 1).await;
    assert_eq!(lines, [format!("sync {sync} saw its timeout")]);

    let waiting = WaitForDeadline::call()
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    wait_until(
        "the async job to start",
        Duration::from_secs(10),
        || async { redis.cli(&["LLEN", "gator:{ctx-slow}:queue"]) == "0" },
    )
    .await;
    stop.cancel();
    running.await.expect("join").expect("worker ran");
    let lines = log_lines(&redis).await;
    assert_eq!(lines[1..], [format!("async {waiting} saw the deadline")]);
    // It stopped when told, and returned `Ok` without saying it finished: its work may be cut
    // short, so it goes back to the head of its queue to run again, its attempt not counted.
    let back = redis.cli(&["LRANGE", "gator:{ctx-slow}:queue", "0", "-1"]);
    let payload: serde_json::Value = serde_json::from_str(&back).expect("one job back");
    assert_eq!(payload["jid"], waiting.as_str());
    assert_eq!(payload["attempt"].as_u64().unwrap_or(0), 0, "{payload}");
}

#[test]
fn a_worker_without_a_state_its_jobs_need_refuses_to_build_and_says_how_to_fix_it() {
    let err = Worker::builder()
        .state(Greeting("hello"))
        .jobs(["report"])
        .build()
        .expect_err("Log was not given");
    assert!(matches!(err, BuildError::MissingState { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("\"report\""), "names the job: {msg}");
    assert!(msg.contains("State<context::Log>"), "names the type: {msg}");
    assert!(msg.contains(".state(value)"), "says how: {msg}");

    // Without `.jobs(..)` every linked job runs, so every one's state is needed.
    let err = Worker::builder()
        .state(Greeting("hello"))
        .build()
        .expect_err("Log was not given");
    assert!(err.to_string().contains("context::Log"), "{err}");
}

#[test]
fn builder_mistakes_are_refused_at_build() {
    let err = Worker::builder()
        .queues("high:0")
        .build()
        .expect_err("a weight of 0");
    assert!(err.to_string().contains("weight"), "{err}");
    let err = Worker::builder()
        .jobs(["no_such_job"])
        .build()
        .expect_err("an unknown job");
    let msg = err.to_string();
    assert!(
        msg.contains("\"no_such_job\"") && msg.contains("report"),
        "names the job and the known ones: {msg}"
    );
    let err = Worker::builder()
        .concurrency(0)
        .jobs(["report"])
        .build()
        .expect_err("concurrency 0");
    assert!(err.to_string().contains("concurrency"), "{err}");
}
