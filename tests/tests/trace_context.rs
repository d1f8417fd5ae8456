//! Trace context from dispatch to run (the `otel` feature): the job's span in the worker is the
//! child of the span it was dispatched in, recorded by an in-memory OpenTelemetry exporter.
//! One test in this file: it installs the process-wide tracing subscriber.

use gator_core::{Client, JobStatus, job};
use gator_tests::RedisServer;
use gator_worker::{CancellationToken, Worker};
use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use std::time::Duration;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

#[job(queue = "traced")]
async fn traced_step(n: u32) {
    let _ = n;
}

fn job_span_of(spans: &[SpanData], jid: &str) -> SpanData {
    spans
        .iter()
        .find(|span| {
            span.name == "job"
                && span
                    .attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "jid" && kv.value.as_str() == jid)
        })
        .cloned()
        .unwrap_or_else(|| panic!("no job span for {jid} among {spans:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_span_is_the_child_of_the_span_it_was_dispatched_in() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("gator-test")));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let redis = RedisServer::start();
    let client = Client::connect(&redis.url()).await.expect("connect");

    // 1. Dispatched inside a span: the payload carries its W3C traceparent.
    let checkout = tracing::info_span!("checkout");
    let inside = TracedStep::call(1)
        .through(&client)
        .dispatch()
        .instrument(checkout.clone())
        .await
        .expect("dispatch");
    drop(checkout);
    // 2. Dispatched outside any span: no header, and the job's span is a root.
    let outside = TracedStep::call(2)
        .through(&client)
        .dispatch()
        .await
        .expect("dispatch");
    // 3. Written by a producer in another language, with the documented header.
    let foreign_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let foreign_parent = "00f067aa0ba902b7";
    let foreign = "0191f6a0-0000-7000-8000-00000000f00d";
    let payload = serde_json::json!({
        "jid": foreign, "job": "traced_step", "args": [3], "queue": "traced",
        "created_at": 1, "enqueued_at": 1,
        "headers": {"traceparent": format!("00-{foreign_trace}-{foreign_parent}-01")}
    });
    let _: () = redis::cmd("RPUSH")
        .arg(client.keys().queue("traced"))
        .arg(payload.to_string())
        .query_async(&mut client.connection())
        .await
        .unwrap();

    let worker = Worker::builder()
        .client(client.clone())
        .queues("traced")
        .jobs(["traced_step"])
        .build()
        .expect("a worker");
    let stop = CancellationToken::new();
    let running = tokio::spawn(worker.run_until(stop.clone()));
    for jid in [&inside, &outside, &foreign.to_owned()] {
        let status = client.wait_for(jid, Duration::from_secs(10)).await.unwrap();
        assert!(matches!(status, JobStatus::Done { .. }), "{status:?}");
    }
    stop.cancel();
    running.await.expect("join").expect("the worker ran");
    provider.force_flush().expect("flush");

    let spans = exporter.get_finished_spans().expect("spans");
    let checkout = spans
        .iter()
        .find(|span| span.name == "checkout")
        .expect("the checkout span");
    let job = job_span_of(&spans, &inside);
    assert_eq!(
        job.span_context.trace_id(),
        checkout.span_context.trace_id(),
        "the job's span is in another trace than its dispatch"
    );
    assert_eq!(job.parent_span_id, checkout.span_context.span_id());

    let root = job_span_of(&spans, &outside);
    assert_ne!(
        root.span_context.trace_id(),
        checkout.span_context.trace_id()
    );
    assert_eq!(root.parent_span_id, SpanId::INVALID);

    let linked = job_span_of(&spans, foreign);
    assert_eq!(
        linked.span_context.trace_id(),
        TraceId::from_hex(foreign_trace).unwrap()
    );
    assert_eq!(
        linked.parent_span_id,
        SpanId::from_hex(foreign_parent).unwrap()
    );
}
