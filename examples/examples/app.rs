//! A web app and its worker in one process: an axum server takes sign-ups and dispatches a job
//! for each, and a Gator worker in the same tokio runtime runs them. Both share one Redis
//! client and one `Signups` value, which jobs take as `State<Signups>`.
//!
//! Run: `GATOR_REDIS_URL=redis://127.0.0.1:6380 cargo run -p gator-examples --example app`, then
//!
//! ```text
//! curl -X POST 'http://127.0.0.1:3000/signup?email=ada@example.com'
//! curl http://127.0.0.1:3000/stats
//! ```
//!
//! Ctrl-C (or SIGTERM) stops the server and the worker together: running jobs finish first.

use axum::extract::{Query, State as AxumState};
use axum::routing::{get, post};
use axum::{Json, Router};
use gator::{CancellationToken, Client, Context, State, Worker, job};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the app and its jobs share: a counter of welcomed users (a database pool in a real
/// app). Cheap to clone: clones share the counter.
#[derive(Clone, Default)]
struct Signups {
    welcomed: Arc<AtomicU64>,
}

/// Welcomes a new user: takes its wire argument, its context and the app's state.
#[job(queue = "signups")]
async fn welcome(email: String, ctx: Context, State(signups): State<Signups>) {
    let n = signups.welcomed.fetch_add(1, Ordering::Relaxed) + 1;
    println!(
        "  [job]  welcomed {email} (job {}, attempt {}), {n} so far",
        ctx.jid(),
        ctx.attempt()
    );
}

/// The web side's state: the shared Redis client and the same `Signups`.
#[derive(Clone)]
struct App {
    client: Client,
    signups: Signups,
}

#[derive(serde::Deserialize)]
struct Signup {
    email: String,
}

async fn signup(
    AxumState(app): AxumState<App>,
    Query(form): Query<Signup>,
) -> Result<Json<serde_json::Value>, String> {
    let jid = Welcome::call(form.email)
        .through(&app.client)
        .dispatch()
        .await
        .map_err(|e| e.to_string())?;
    Ok(Json(serde_json::json!({ "jid": jid })))
}

async fn stats(AxumState(app): AxumState<App>) -> Json<serde_json::Value> {
    let welcomed = app.signups.welcomed.load(Ordering::Relaxed);
    Json(serde_json::json!({ "welcomed": welcomed }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::var("GATOR_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let addr = std::env::var("APP_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let client = Client::connect(&url).await?;
    let signups = Signups::default();

    // The worker: built in code, sharing the client and the state. It installs no signal
    // handler and sets no default client: the app decides when it stops.
    let worker = Worker::builder()
        .client(client.clone())
        .queues("signups")
        .concurrency(4)
        .state(signups.clone())
        .job::<Welcome>()
        .build()?;
    let stop = CancellationToken::new();
    let worker = tokio::spawn(worker.run_until(stop.clone()));

    let router = Router::new()
        .route("/signup", post(signup))
        .route("/stats", get(stats))
        .with_state(App { client, signups });
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{addr} (Ctrl-C stops the server and the worker)");
    let shutdown = stop.clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            wait_for_signal().await;
            shutdown.cancel();
        })
        .await?;
    stop.cancel();
    worker.await??;
    println!("stopped cleanly");
    Ok(())
}

/// Ctrl-C, or SIGTERM where there is one.
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM can be listened for");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
