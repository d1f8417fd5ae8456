//! The dispatch entry points of 0.9, deprecated in 0.10 for the builders (one per thing
//! dispatched, one `dispatch()`), still dispatch as they did for this release: each is a line
//! or two over its builder, and this is the one test that calls them.

use gator_core::{Chain, Error, JobStatus, Workflow, job};
use gator_tests::{RedisServer, client};
use serde_json::json;
use std::time::{Duration, SystemTime};

#[job(queue = "d")]
async fn note(n: u32) {
    let _ = n;
}

/// How many jobs `redis` holds on `queue`'s list and in its scheduled set.
/// How many jobs wait in `queue`'s list, and how many are scheduled: in its set, or beyond the
/// horizon in its minutes' lists (`later_n`).
fn held(redis: &RedisServer, queue: &str) -> (String, String) {
    let set = redis.cli(&["ZCARD", &format!("gator:{{{queue}}}:scheduled")]);
    let lists = redis.cli(&["GET", &format!("gator:{{{queue}}}:later_n")]);
    let count = |n: String| n.trim().parse::<u64>().unwrap_or(0);
    (
        redis.cli(&["LLEN", &format!("gator:{{{queue}}}:queue")]),
        (count(set) + count(lists)).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(deprecated)] // the one place the old entry points are called
async fn the_deprecated_entry_points_still_dispatch_as_they_did() {
    let redis = RedisServer::start();
    let client = client(&redis.url()).await;
    gator_core::set_default_client(client.clone());
    let hour = Duration::from_secs(3600);
    let later = SystemTime::now() + hour;

    // Jobs, now and later, through a client or the default one.
    let now = [
        client.dispatch(Note::call(1)).await.unwrap(),
        client
            .dispatch_unique(Note::call(2))
            .await
            .unwrap()
            .into_jid(),
        Note::call(3).dispatch_with(&client).await.unwrap(),
        (Note::call(4).dispatch_unique_with(&client).await)
            .unwrap()
            .into_jid(),
    ];
    let scheduled = [
        client.dispatch_at(Note::call(5), later).await.unwrap(),
        client.dispatch_in(Note::call(6), hour).await.unwrap(),
        (client.dispatch_unique_at(Note::call(7), later).await)
            .unwrap()
            .into_jid(),
        (client.dispatch_unique_in(Note::call(8), hour).await)
            .unwrap()
            .into_jid(),
        Note::call(9).dispatch_at(later).await.unwrap(),
        Note::call(10).dispatch_in(hour).await.unwrap(),
        (Note::call(11).dispatch_unique_in(hour).await)
            .unwrap()
            .into_jid(),
    ];
    for jid in &now {
        assert_eq!(client.status(jid).await.unwrap(), JobStatus::Queued);
    }
    for jid in &scheduled {
        let status = client.status(jid).await.unwrap();
        assert!(matches!(status, JobStatus::Scheduled { .. }), "{status:?}");
    }
    let first = client.dispatch_unique(Note::call(20).unique_key("k"));
    let first = first.await.unwrap();
    let again = client.dispatch_unique(Note::call(21).unique_key("k"));
    let again = again.await.unwrap();
    assert!(!first.is_duplicate() && again.is_duplicate());
    assert_eq!(again.jid(), first.jid());
    assert_eq!(held(&redis, "d"), ("5".into(), "7".into()));

    // The same refusals as the builders'.
    let nan = client.dispatch_at(Note::call(30), f64::NAN).await;
    assert!(matches!(nan, Err(Error::InvalidTime { .. })), "{nan:?}");
    let far = later + Duration::from_secs(10 * 365 * 24 * 3600);
    let chain = || Chain::new().then(Note::call(40).queue("c"));
    let refused = chain().dispatch_at(far).await.unwrap_err();
    assert!(refused.to_string().contains("more than 5 years ahead"));

    // Chains: the first step on its queue, or in its scheduled set.
    client.dispatch_chain(chain(), None).await.unwrap();
    chain().dispatch_with(&client).await.unwrap();
    client.dispatch_chain(chain(), Some(later)).await.unwrap();
    client.dispatch_chain_in(chain(), hour).await.unwrap();
    chain().dispatch_at(later).await.unwrap();
    chain().dispatch_in(hour).await.unwrap();
    assert_eq!(held(&redis, "c"), ("2".into(), "4".into()));

    // Workflows.
    let workflow = || Workflow::new().then(Note::call(50).queue("w"));
    let ids = [
        client.dispatch_workflow(workflow()).await.unwrap(),
        workflow().dispatch_with(&client).await.unwrap(),
    ];
    for id in &ids {
        assert!(client.workflow_status(id).await.unwrap().is_some(), "{id}");
    }
    assert_eq!(held(&redis, "w"), ("2".into(), "0".into()));

    // By wire name: refused unless the catalogue knows it, sent when forced.
    let raw = client
        .enqueue_raw("n", "no_such_job", json!([]), None)
        .await;
    assert!(matches!(raw, Err(Error::NotInCatalogue { .. })), "{raw:?}");
    let raw = client.enqueue_raw_in("n", "no_such_job", json!([]), hour);
    let raw = raw.await;
    assert!(matches!(raw, Err(Error::NotInCatalogue { .. })), "{raw:?}");
    let forced = client.dispatch_by_name("no_such_job", json!([])).on("n");
    let forced = forced.force().send().await.unwrap();
    assert_eq!(
        client.status(forced.jid()).await.unwrap(),
        JobStatus::Queued
    );
    assert_eq!(held(&redis, "n"), ("1".into(), "0".into()));
}
