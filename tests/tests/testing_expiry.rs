//! The testing mode (`gator_core::testing`) honours deadlines, without Redis: the fake judges
//! them on its own clock at each drain, inline on the real clock at the dispatch.

use gator_core::expiry::OnExpire;
use gator_core::{Error, testing};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The ids of the jobs below that ran (tests run on their own threads, with their own ids).
static RAN: Mutex<Vec<u64>> = Mutex::new(Vec::new());

fn ran(id: u64) -> bool {
    RAN.lock().unwrap().contains(&id)
}

/// Kept in the dead set once expired (a minute after its dispatch).
#[gator_core::job(queue = "reports", expires_in = "1m")]
async fn timely_report(id: u64) {
    RAN.lock().unwrap().push(id);
}

/// Dropped once expired (a minute after its dispatch).
#[gator_core::job(queue = "reports", expires_in = "1m", on_expire = "drop")]
async fn timely_ping(id: u64) {
    RAN.lock().unwrap().push(id);
}

#[tokio::test]
async fn a_fake_drain_after_a_jobs_deadline_on_the_fake_clock_does_not_run_it() {
    let fake = testing::fake();
    TimelyReport::call(1).dispatch().await.unwrap();
    TimelyPing::call(2).dispatch().await.unwrap();
    let in_time = fake.drain().await;
    assert_eq!((in_time.ran, in_time.expired.len()), (2, 0));
    assert!(ran(1) && ran(2), "both ran before their deadline");

    TimelyReport::call(3).dispatch().await.unwrap();
    TimelyPing::call(4).dispatch().await.unwrap();
    TimelyReport::call(5)
        .expires_in(Duration::from_secs(3600))
        .dispatch()
        .await
        .unwrap();
    fake.advance(Duration::from_secs(60));
    let late = fake.drain().await;
    assert_eq!(late.ran, 1, "only the job given an hour ran");
    let expired: Vec<(serde_json::Value, OnExpire)> = late
        .expired
        .iter()
        .map(|(job, on_expire)| (job.args.clone(), *on_expire))
        .collect();
    assert_eq!(
        expired,
        [
            (serde_json::json!([3]), OnExpire::Dead),
            (serde_json::json!([4]), OnExpire::Drop)
        ]
    );
    assert!(ran(5) && !ran(3) && !ran(4));
    assert!(
        fake.jobs().is_empty(),
        "expired jobs are not kept for later"
    );
}

#[tokio::test]
async fn a_fake_chain_stops_at_a_step_whose_deadline_came_before_its_turn() {
    let fake = testing::fake();
    let hour = Duration::from_secs(3600);
    gator_core::Chain::new()
        .then(TimelyReport::call(10).expires_in(hour))
        .then(TimelyReport::call(11))
        .then(TimelyReport::call(12).expires_in(hour))
        .dispatch()
        .await
        .unwrap();
    // The second step's minute counts from the chain's dispatch, as on Redis.
    fake.advance(Duration::from_secs(61));
    let drained = fake.drain().await;
    assert_eq!(drained.ran, 1);
    let expired: Vec<_> = drained
        .expired
        .iter()
        .map(|(job, _)| job.args.clone())
        .collect();
    assert_eq!(expired, [serde_json::json!([11])]);
    assert!(
        ran(10) && !ran(11) && !ran(12),
        "the chain stopped at the expired step"
    );
    assert!(fake.jobs().is_empty());
}

#[tokio::test]
async fn inline_a_deadline_already_past_expires_the_job_at_its_dispatch() {
    let _inline = testing::inline();
    let past = SystemTime::now() - Duration::from_secs(60);
    let kept = TimelyReport::call(6).expires_at(past).dispatch().await;
    match kept {
        Err(Error::InlineJobFailed { reason, .. }) => {
            assert_eq!(reason, gator_core::expiry::REASON);
        }
        other => panic!("expected the dispatch to fail as expired, got {other:?}"),
    }
    TimelyPing::call(7)
        .expires_at(past)
        .dispatch()
        .await
        .unwrap();
    assert!(!ran(6) && !ran(7), "neither ran");
    TimelyReport::call(8).dispatch().await.unwrap();
    assert!(ran(8), "in time, it runs");
}
