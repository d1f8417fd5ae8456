//! The README's examples of Gator inside your own app compile as shown: "Middleware" (client and
//! server middleware), "Run the worker inside your app" and the dashboard mounted in an axum app
//! ("Run the dashboard"). Their statements are in async fns that take what they name (`url`,
//! `client`, `db`, `my_tower_layer`, `shutdown_signal`). Nothing runs: those fns need Redis and
//! are never called.

#[path = "readme/check.rs"]
mod readme_check;

/// "Middleware": a tenant header written by the client, read around every run.
#[allow(unused_variables)] // the README builds a worker to show the builder; it does not run it
mod middleware {
    tokio::task_local! {
        /// The tenant a job runs for, set by the server middleware.
        static TENANT: String;
    }

    /// The app's tenant of the request being served, if any.
    fn current_tenant() -> Option<String> {
        Some("acme".to_owned())
    }

    use gator::{Client, Payload, middleware::JobRun};
    #[rustfmt::skip] // the README shows the import on one line
    use gator::{Worker, worker::middleware::{Next, from_fn}};

    /// The README's `my_tower_layer`: any tower layer over the job service.
    type MyTowerLayer = tower::layer::util::Identity;

    #[allow(dead_code)] // needs Redis: compiled, never called
    #[rustfmt::skip] // the README aligns its comments its own way
    async fn embed(url: String, my_tower_layer: MyTowerLayer) -> anyhow::Result<()> {
        // Client middleware: sees each job before it is stored, on every path (dispatch, _at, _in,
        // dispatch_many, each chain or workflow step). Change it, or refuse it with Err(reason).
        let client = Client::builder(url)
            .middleware(|job: &mut Payload| {
                let tenant = current_tenant().ok_or("no tenant for this request")?;
                job.headers.insert("tenant".into(), tenant);
                Ok(())
            })
            .connect()
            .await?;

        // Server middleware: a tower Layer over the job run, or an async fn with `from_fn`.
        let worker = Worker::builder()
            .client(client)
            .layer(from_fn(|run: JobRun, next: Next| async move {
                let tenant = run.headers().get("tenant").cloned().unwrap_or_default();
                TENANT.scope(tenant, next.run(run)).await // a tokio task-local, set for the run
            }))
            .layer(my_tower_layer) // any tower::Layer<JobService> whose service takes a JobRun
            .build()?;
        Ok(())
    }
}

/// "Run the worker inside your app": a worker built and run in the app's own runtime.
mod worker_inside {
    use gator::{Client, State, job};

    /// The app's database handle, given to the worker as state.
    #[derive(Clone)]
    pub struct Db;

    /// The one job the README's worker runs.
    #[job(queue = "receipts")]
    async fn send_receipt(_order: u64, State(_db): State<Db>) {}

    use gator::{CancellationToken, Worker};

    #[allow(dead_code)] // needs Redis: compiled, never called
    #[rustfmt::skip] // the README aligns its comments its own way
    async fn embed(client: Client, db: Db) -> anyhow::Result<()> {
        let worker = Worker::builder()
            .client(client.clone())            // or .redis_url("rediss://...") with .ca_cert(path)
            .queues("receipts")                // the command line's syntax: "high:3,default:1"
            .concurrency(20)
            .shutdown_timeout(std::time::Duration::from_secs(30))
            .state(db.clone())                 // one per State<T> type your jobs take
            .jobs(["send_receipt"])            // only these jobs (default: every linked #[job]),
                                               // declared #[job(queue = "receipts")]: their own queue
            .log_to_stderr()                   // only if your app installs no tracing subscriber
            .build()?;                         // checks the queues, the job names and the states
        let stop = CancellationToken::new();
        let running = tokio::spawn(worker.run_until(stop.clone()));
        // ... serve HTTP; on shutdown:
        stop.cancel();
        running.await??;                       // running jobs finished or were put back
        Ok(())
    }
}

/// "Run the dashboard": the dashboard mounted under `/gator` in the app's axum router.
mod dashboard {
    /// The app's own page.
    async fn home() -> &'static str {
        "the shop"
    }

    use gator::web::{ServeLimits, WebConfig, router};

    #[allow(dead_code)] // needs Redis: compiled, never called
    async fn mount(shutdown_signal: impl Future<Output = ()> + Send) -> anyhow::Result<()> {
        let client = gator::Client::from_env().await?;
        let app = axum::Router::new()
            .route("/", axum::routing::get(home))
            .nest("/gator", router(client, WebConfig::new().read_only(false)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
        gator::web::serve(listener, app, ServeLimits::default(), shutdown_signal).await?;
        Ok(())
    }
}

#[test]
fn the_readme_shows_this_code() {
    let here = include_str!("readme_embedding.rs");
    readme_check::assert_shows("docs/guide/middleware.md", "## Middleware", 1, here);
    readme_check::assert_shows(
        "docs/guide/worker.md",
        "## Run the worker inside your app",
        1,
        here,
    );
    readme_check::assert_shows("docs/operate/dashboard.md", "## Run the dashboard", 1, here);
}
