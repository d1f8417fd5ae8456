//! The JSON API under `/api`: what the pages fetch, and what scripts and other languages use.
//! The book's page "The HTTP API" (docs/operate/http-api.md) lists every route with a `curl` example.

mod act;
mod enqueue;
mod find;
mod job;
mod outbox;
mod position;
mod read;
mod scaling;
mod search;
mod views;

use crate::app::App;
use axum::Router;
use axum::routing::{get, post};

/// Every API route, relative to where the router is mounted.
pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/api/overview", get(read::overview))
        .route("/api/history", get(read::history))
        .route("/api/queues", get(read::queues))
        .route("/api/queues/{queue}", get(read::queue))
        .route("/api/queues/{queue}/jobs", post(enqueue::enqueue))
        .route("/api/queues/{queue}/pause", post(act::pause_queue))
        .route("/api/queues/{queue}/resume", post(act::resume_queue))
        .route("/api/queues/{queue}/clear", post(act::clear_queue))
        .route("/api/processes", get(read::processes))
        .route("/api/scaling", get(scaling::scaling))
        .route("/api/outbox", get(outbox::outbox))
        .route("/api/sets/{set}", get(find::set))
        .route("/api/sets/{set}/retry", post(act::retry_selected))
        .route("/api/sets/{set}/delete", post(act::delete_selected))
        .route("/api/sets/{set}/jobs/{jid}/retry", post(act::retry_one))
        .route("/api/sets/{set}/jobs/{jid}/delete", post(act::delete_one))
        .route("/api/jobs", post(enqueue::enqueue_by_name))
        .route("/api/catalogue", get(read::catalogue))
        .route("/api/jobs/{jid}", get(job::job))
        .route("/api/jobs/{jid}/position", get(position::position))
        .route("/api/jobs/{jid}/cancel", post(act::cancel_job))
        .route("/api/flows", get(read::flows))
        .route("/api/workflows/{id}", get(read::workflow))
        .route("/api/cron", get(read::cron))
        .route("/api/cron/{name}/pause", post(act::pause_cron))
        .route("/api/cron/{name}/resume", post(act::resume_cron))
        .route("/api/cron/{name}/run", post(act::run_cron))
        .route("/api/limits", get(read::limits))
        .route("/api/search", get(search::search))
        .route("/api/replies", post(act::reply))
}
