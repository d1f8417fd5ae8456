//! Trace context through the outbox (the `otel` feature): a job enqueued in a transaction
//! inside a span runs in a span that is that span's child, though it reached Redis later, from
//! another task. One test in this file: it installs the process-wide tracing subscriber.

use gator::outbox::sqlx::PgPool;
use gator::outbox::{EnqueueIn, Relay};
use gator_core::{Client, JobStatus, job};
use gator_tests::{PostgresServer, RedisServer};
use gator_worker::{CancellationToken, Worker};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use std::time::Duration;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

#[job(queue = "outbox_traced")]
async fn traced_receipt(order: u32) {
    let _ = order;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_enqueued_in_a_span_runs_in_its_child() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("gator-test")));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let (pg, redis) = (PostgresServer::start(), RedisServer::start());
    let pool = PgPool::connect(&pg.url()).await.unwrap();
    gator::outbox::migrate(&pool).await.unwrap();
    let client = Client::connect(&redis.url()).await.unwrap();

    // No client named and no default set: the enqueue still carries the span's context.
    let checkout = tracing::info_span!("checkout");
    let jid = async {
        let mut tx = pool.begin().await.unwrap();
        let jid = TracedReceipt::call(7).enqueue_in(&mut tx).await.unwrap();
        tx.commit().await.unwrap();
        jid
    }
    .instrument(checkout.clone())
    .await;
    drop(checkout);
    Relay::new(pool.clone(), client.clone())
        .drain()
        .await
        .unwrap();

    let worker = Worker::builder()
        .client(client.clone())
        .queues("outbox_traced")
        .jobs(["traced_receipt"])
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    let status = client
        .wait_for(&jid, Duration::from_secs(10))
        .await
        .unwrap();
    assert!(matches!(status, JobStatus::Done { .. }), "{status:?}");
    stop.cancel();
    running.await.unwrap().unwrap();
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    let checkout = spans.iter().find(|s| s.name == "checkout").unwrap();
    let job = spans
        .iter()
        .find(|s| {
            s.name == "job"
                && s.attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "jid" && kv.value.as_str() == jid)
        })
        .expect("the job's span");
    assert_eq!(
        job.span_context.trace_id(),
        checkout.span_context.trace_id()
    );
    assert_eq!(job.parent_span_id, checkout.span_context.span_id());
}
