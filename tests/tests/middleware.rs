//! Middleware: client middleware changes or refuses each job before it is stored; server
//! layers wrap each run, in the documented order, and their failures and panics are the job's.

use gator_core::middleware::JobRun;
use gator_core::{Client, Context, Error, JobStatus, Payload, job};
use gator_tests::{RedisServer, wait_until};
use gator_worker::middleware::{JobService, Next, from_fn};
use gator_worker::{CancellationToken, Worker, WorkerBuilder};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::Poll;
use std::time::Duration;

/// What the jobs and layers of this file saw, in order, tagged by test.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn see(line: impl Into<String>) {
    SEEN.lock().unwrap().push(line.into());
}

fn seen(prefix: &str) -> Vec<String> {
    SEEN.lock()
        .unwrap()
        .iter()
        .filter_map(|line| line.strip_prefix(prefix).map(str::to_owned))
        .collect()
}

tokio::task_local! {
    /// The tenant a server middleware sets for the run, as an app would for its database.
    static TENANT: String;
}

#[job(queue = "mw-tenant")]
async fn greet(ctx: Context, name: String) {
    let tenant = TENANT.try_with(Clone::clone).unwrap_or_default();
    see(format!(
        "tenant:{name} header={:?} task-local={tenant}",
        ctx.header("tenant")
    ));
}

#[job(queue = "mw-order")]
async fn ordered() {
    see("order:job");
}

#[job(queue = "mw-fail", retries = 3)]
async fn never_runs() {
    see("fail:job ran");
}

#[job(queue = "mw-panic", retries = 3)]
async fn after_panic() {
    see("panic:job ran");
}

/// Client middleware that stamps the tenant header, and refuses jobs for tenant "blocked".
fn tenant_stamp(tenant: &'static str) -> impl Fn(&mut Payload) -> Result<(), String> + Send + Sync {
    move |job: &mut Payload| {
        if tenant == "blocked" {
            return Err(format!("tenant {tenant} may not dispatch {}", job.job));
        }
        job.headers.insert("tenant".into(), tenant.into());
        Ok(())
    }
}

async fn run_worker(builder: WorkerBuilder, until: impl AsyncFnOnce()) {
    let worker = builder.build().expect("a valid worker");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    until().await;
    stop.cancel();
    running.await.expect("join").expect("the worker ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_middleware_stamps_a_header_that_server_middleware_and_the_job_read() {
    let redis = RedisServer::start();
    let client = Client::builder(redis.url())
        .middleware(tenant_stamp("acme"))
        .connect()
        .await
        .expect("connect");
    let jid = Greet::call("ada".into())
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");

    let builder = Worker::builder()
        .client(client.clone())
        .queues("mw-tenant")
        .jobs(["greet"])
        .layer(from_fn(|run: JobRun, next: Next| async move {
            let tenant = run.headers().get("tenant").cloned().unwrap_or_default();
            TENANT.scope(tenant, next.run(run)).await
        }));
    run_worker(builder, async || {
        let status = client
            .wait_for(&jid, Duration::from_secs(10))
            .await
            .unwrap();
        assert!(matches!(status, JobStatus::Done { .. }), "{status:?}");
    })
    .await;
    assert_eq!(
        seen("tenant:"),
        ["ada header=Some(\"acme\") task-local=acme"]
    );
}

#[tokio::test]
async fn a_refused_dispatch_stores_nothing_and_says_why() {
    let redis = RedisServer::start();
    let client = Client::builder(redis.url())
        .middleware(tenant_stamp("blocked"))
        .connect()
        .await
        .expect("connect");
    let refused = Greet::call("eve".into()).through(&client).dispatch().await;
    match refused {
        Err(Error::Rejected { job, reason }) => {
            assert_eq!(job, "greet");
            assert_eq!(reason, "tenant blocked may not dispatch greet");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let many = client
        .dispatch_many([Greet::call("a".into()), Greet::call("b".into())])
        .await;
    assert!(matches!(many, Err(Error::Rejected { .. })), "{many:?}");
    let later = Greet::call("c".into())
        .after(Duration::from_secs(60))
        .through(&client)
        .dispatch()
        .await;
    assert!(matches!(later, Err(Error::Rejected { .. })), "{later:?}");
    assert_eq!(
        gator_core::Admin::new(client.clone())
            .queue_len("mw-tenant")
            .await
            .unwrap(),
        0
    );
    let scheduled = gator_core::Admin::new(client.clone())
        .set_len(gator_core::SetKind::Scheduled, Some("mw-tenant"))
        .await
        .unwrap();
    assert_eq!(scheduled, 0, "a refused scheduled job was stored");
}

/// A hand-written tower layer, as existing tower middleware would be: records around the run.
#[derive(Clone)]
struct Around(&'static str);

impl tower::Layer<JobService> for Around {
    type Service = AroundService;
    fn layer(&self, inner: JobService) -> AroundService {
        AroundService {
            name: self.0,
            inner,
        }
    }
}

#[derive(Clone)]
struct AroundService {
    name: &'static str,
    inner: JobService,
}

impl tower::Service<JobRun> for AroundService {
    type Response = Option<String>;
    type Error = gator_core::JobError;
    type Future = Pin<Box<dyn Future<Output = gator_core::JobResult> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Result<(), gator_core::JobError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, run: JobRun) -> Self::Future {
        let name = self.name;
        see(format!("order:{name} before"));
        let inner = self.inner.call(run);
        Box::pin(async move {
            let result = inner.await;
            see(format!("order:{name} after"));
            result
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_middleware_runs_in_order_and_server_layers_nest_first_added_outermost() {
    let redis = RedisServer::start();
    let client = Client::builder(redis.url())
        .middleware(|job: &mut Payload| {
            job.headers.insert("first".into(), "1".into());
            Ok(())
        })
        .middleware(|job: &mut Payload| {
            // The second sees what the first did.
            let first = job.headers.get("first").cloned().unwrap_or_default();
            job.headers.insert("second-saw".into(), first);
            Ok(())
        })
        .connect()
        .await
        .expect("connect");
    let jid = Ordered::call()
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    let mut conn = client.connection();
    let stored: Vec<String> = redis::cmd("LRANGE")
        .arg(client.keys().queue("mw-order"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let payload = Payload::from_json(&stored[0]).unwrap();
    assert_eq!(payload.jid, jid);
    assert_eq!(
        payload.headers.get("second-saw").map(String::as_str),
        Some("1")
    );

    let builder = Worker::builder()
        .client(client.clone())
        .queues("mw-order")
        .jobs(["ordered"])
        .layer(Around("outer"))
        .layer(from_fn(|run: JobRun, next: Next| async move {
            see("order:inner before");
            let result = next.run(run).await;
            see("order:inner after");
            result
        }));
    run_worker(builder, async || {
        let status = client
            .wait_for(&jid, Duration::from_secs(10))
            .await
            .unwrap();
        assert!(matches!(status, JobStatus::Done { .. }), "{status:?}");
    })
    .await;
    assert_eq!(
        seen("order:"),
        [
            "outer before",
            "inner before",
            "job",
            "inner after",
            "outer after"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_middleware_that_fails_the_run_has_the_job_retried_with_its_reason() {
    let redis = RedisServer::start();
    let client = Client::connect(&redis.url()).await.expect("connect");
    let jid = NeverRuns::call()
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    let builder = Worker::builder()
        .client(client.clone())
        .queues("mw-fail")
        .jobs(["never_runs"])
        .layer(from_fn(|_run: JobRun, _next: Next| async move {
            Err(gator_core::JobError::new("the tenant's database is down"))
        }));
    run_worker(builder, async || {
        wait_until("the job to be retrying", Duration::from_secs(10), || async {
            matches!(
                client.status_in("mw-fail", &jid).await.unwrap(),
                JobStatus::Retrying { ref error, .. } if error == "the tenant's database is down"
            )
        })
        .await;
    })
    .await;
    assert!(seen("fail:").is_empty(), "the job ran past its middleware");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_middleware_fails_the_job_and_the_worker_keeps_running() {
    let redis = RedisServer::start();
    let client = Client::connect(&redis.url()).await.expect("connect");
    let first = AfterPanic::call()
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    let second = AfterPanic::call()
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    let builder = Worker::builder()
        .client(client.clone())
        .queues("mw-panic")
        .concurrency(1)
        .jobs(["after_panic"])
        .layer(from_fn(|run: JobRun, next: Next| async move {
            if run.context().attempt() == 1 {
                panic!("metrics backend exploded");
            }
            next.run(run).await
        }));
    run_worker(builder, async || {
        for jid in [&first, &second] {
            wait_until(
                "the job to be retrying",
                Duration::from_secs(10),
                || async {
                    matches!(
                        client.status_in("mw-panic", jid).await.unwrap(),
                        JobStatus::Retrying { ref error, .. }
                            if error.contains("job middleware panicked: metrics backend exploded")
                    )
                },
            )
            .await;
        }
    })
    .await;
}
