//! Retry strategies that see the error: a typed error tells the strategy what failed (a rate
//! limit with its Retry-After, a resource that is gone, a flaky call), and it decides: retry in
//! a given time, give up to the dead set, or discard (recorded `discarded`, not in the dead set).

use gator_core::retry::{RetryContext, RetryDecision};
use gator_core::{JobError, JobStatus, job};
use gator_tests::{RedisServer, TestWorker, client, wait_until};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

/// What the partner API said.
#[derive(Debug)]
enum ApiError {
    RateLimited { retry_after: Duration },
    Gone,
    Flaky,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::RateLimited { retry_after } => write!(f, "rate limited for {retry_after:?}"),
            ApiError::Gone => f.write_str("the resource is gone"),
            ApiError::Flaky => f.write_str("flaky"),
        }
    }
}

impl std::error::Error for ApiError {}

/// Retry-After is obeyed, a gone resource is discarded, a flaky call gets three attempts.
fn by_kind(failure: &RetryContext<'_>) -> RetryDecision {
    match failure.error.downcast_ref::<ApiError>() {
        Some(ApiError::RateLimited { retry_after }) => RetryDecision::RetryIn(*retry_after),
        Some(ApiError::Gone) => RetryDecision::Discard,
        Some(ApiError::Flaky) if failure.failures < 3 => {
            RetryDecision::RetryIn(Duration::from_millis(100))
        }
        _ => RetryDecision::Dead,
    }
}

static FLAKY_RUNS: AtomicU32 = AtomicU32::new(0);

#[job(queue = "rs", retry = by_kind)]
async fn call_partner(kind: String) -> Result<(), JobError> {
    let error = match kind.as_str() {
        "limited" => ApiError::RateLimited {
            retry_after: Duration::from_secs(120),
        },
        "gone" => ApiError::Gone,
        _ => {
            FLAKY_RUNS.fetch_add(1, Ordering::SeqCst);
            ApiError::Flaky
        }
    };
    Err(JobError::caused_by(error))
}

async fn final_or(client: &gator_core::Client, jid: &str, state: &str) -> JobStatus {
    wait_until(
        &format!("{jid} {state}"),
        Duration::from_secs(15),
        || async { client.status(jid).await.unwrap().name() == state },
    )
    .await;
    client.status(jid).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strategy_sees_the_typed_error_and_decides() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    let worker = TestWorker::start(&redis.url(), Some("rs"), 2);
    let limited = CallPartner::call("limited".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let gone = CallPartner::call("gone".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let flaky = CallPartner::call("flaky".into())
        .through(&client)
        .dispatch()
        .await
        .unwrap();

    // The rate limit's Retry-After (120 s) sets the next run, not the default curve (15 s).
    match final_or(&client, &limited, "retrying").await {
        JobStatus::Retrying { next_at, error, .. } => {
            let wait = next_at.duration_since(SystemTime::now()).unwrap();
            assert!(
                wait > Duration::from_secs(100) && wait <= Duration::from_secs(121),
                "runs again in {wait:?}"
            );
            assert_eq!(error, "rate limited for 120s");
        }
        other => panic!("{other:?}"),
    }
    // Gone: discarded, recorded with its error, not in the dead set.
    match final_or(&client, &gone, "discarded").await {
        JobStatus::Discarded {
            attempts, error, ..
        } => assert_eq!((attempts, error.as_str()), (1, "the resource is gone")),
        other => panic!("{other:?}"),
    }
    // Flaky: three attempts, then the dead set.
    match final_or(&client, &flaky, "dead").await {
        JobStatus::Dead { attempts, .. } => assert_eq!(attempts, 3),
        other => panic!("{other:?}"),
    }
    assert_eq!(FLAKY_RUNS.load(Ordering::SeqCst), 3);
    let dead = redis.zset_json("gator:{rs}:dead").await;
    assert_eq!(dead.len(), 1, "only the flaky job: {dead:?}");
    worker.stop().await;
}
