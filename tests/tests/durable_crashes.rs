//! Durable jobs through SIGKILL: a worker process (`gator-test-worker`, whose durable jobs are
//! in `tests/src/bin/durable_jobs.rs`) is killed at each point of a durable job's life, and the
//! job still finishes, with what it saved kept and its work repeated at most since its last
//! save. Each job counts its side effects in Redis (`durable:effects <id>:<what>`) and stops
//! at a named point the first time it reaches it (`durable:reached <id>:<point>`), so the kill
//! lands there. A frozen proxy (`SilentProxy::cut`) holds a write sent just before the kill,
//! then either loses it (the proxy is dropped) or delivers it after the process died (healed).
//! The successor runs under the same `--worker-id`, so it puts its predecessor's jobs back at
//! once instead of waiting for the lease.
//!
//! One server only (the proxy fronts one port); `durable.rs` covers the cluster.

#[path = "durable_crashes/harness.rs"]
mod harness;

use gator_core::{JobStatus, job};
use gator_tests::{RedisServer, client, wait_until};
use harness::{
    UNTIL_KILLED, all_effects, done, effects, holds, in_flight, kill, kill_during_checkpoint,
    kill_during_suspend, reached, worker, worker_with,
};
use std::collections::HashMap;
use std::time::{Duration, Instant};

// The worker binary runs these; here they only give typed calls with the same wire names and
// argument types. Their bodies never run in this process.
#[job(queue = "durable")]
async fn durable_steps(_id: u64, _holds: Vec<String>, _hold_ms: u64) {}

#[job(queue = "durable")]
async fn durable_rows(_id: u64, _rows: u32, _holds: Vec<String>, _hold_ms: u64) {}

#[job(queue = "durable")]
async fn durable_nap(_id: u64, _millis: u64, _holds: Vec<String>, _hold_ms: u64) {}

#[job(queue = "durable")]
async fn durable_walk(_id: u64, _items: u64, _every: u64) {}

#[job(queue = "durable")]
async fn durable_walk_then_nap(_id: u64, _items: u64, _every: u64, _millis: u64) {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_killed_after_its_side_effect_runs_again_once_and_a_written_step_never_again() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let jid = DurableSteps::call(1, holds(&["in:b", "before:c"]), UNTIL_KILLED)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    // Killed with step b's side effect done and its result not written.
    let first = worker(&redis.url(), "steps");
    reached(&redis, 1, "in:b").await;
    kill(first);
    // Killed with b's result written, before c.
    let second = worker(&redis.url(), "steps");
    reached(&redis, 1, "before:c").await;
    kill(second);
    let third = worker(&redis.url(), "steps");
    done(&client, &jid).await;
    drop(third);

    assert_eq!(
        effects(&redis, 1, "a"),
        1,
        "a written step never runs again"
    );
    assert_eq!(
        effects(&redis, 1, "b"),
        2,
        "b ran again once, for its one kill"
    );
    assert_eq!(effects(&redis, 1, "c"), 1);
    let result = client.result::<String>(&jid).await.unwrap();
    assert_eq!(
        result.as_deref(),
        Some("a=1 b=2 c=1"),
        "each step's result is the one written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_durable_job_resumes_from_its_checkpoint_on_another_worker_once_its_lease_lapses()
 {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let jid = DurableRows::call(10, 6, holds(&["saved:4"]), UNTIL_KILLED)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    // No --worker-id: only the lease's end frees its jobs.
    let first = worker_with(&redis.url(), &["--lease", "4s"]);
    reached(&redis, 10, "saved:4").await;
    kill(first);
    let other = worker_with(&redis.url(), &["--lease", "4s"]);
    done(&client, &jid).await;
    drop(other);

    let rows = all_effects(&redis, 10);
    for row in 0..6 {
        assert_eq!(
            rows.get(&format!("row{row}")),
            Some(&1),
            "each row once: {rows:?}"
        );
    }
    assert_eq!(client.result::<u32>(&jid).await.unwrap(), Some(6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_while_its_checkpoint_is_lost_on_the_way_repeats_only_the_row_since_the_last_one()
 {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let (jid, proxy) = kill_during_checkpoint(&redis, &client, 2).await;
    drop(proxy); // the write never reaches Redis
    let saved = in_flight(&redis);
    assert!(
        saved.contains(r#""cp":2"#),
        "checkpoint 2 in flight: {saved}"
    );
    let successor = worker(&redis.url(), "rows-2");
    done(&client, &jid).await;
    drop(successor);

    let rows = all_effects(&redis, 2);
    for row in 0..6 {
        let expected = if row == 2 { 2 } else { 1 };
        assert_eq!(rows.get(&format!("row{row}")), Some(&expected), "{rows:?}");
    }
    assert_eq!(client.result::<u32>(&jid).await.unwrap(), Some(6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_written_after_its_worker_was_killed_is_where_the_job_resumes() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let (jid, proxy) = kill_during_checkpoint(&redis, &client, 3).await;
    proxy.heal(); // the write reaches Redis after its process died
    wait_until(
        "the checkpoint to land",
        Duration::from_secs(10),
        || async { in_flight(&redis).contains(r#""cp":3"#) },
    )
    .await;
    let successor = worker(&redis.url(), "rows-3");
    done(&client, &jid).await;
    drop(successor);

    let rows = all_effects(&redis, 3);
    for row in 0..6 {
        assert_eq!(
            rows.get(&format!("row{row}")),
            Some(&1),
            "each row once: {rows:?}"
        );
    }
    assert_eq!(client.result::<u32>(&jid).await.unwrap(), Some(6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeper_killed_before_its_suspension_and_again_while_parked_sleeps_once_and_runs_each_step_once()
 {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let jid = DurableNap::call(4, 2000, holds(&["pre-sleep"]), UNTIL_KILLED)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let first = worker(&redis.url(), "nap");
    reached(&redis, 4, "pre-sleep").await;
    kill(first); // its step saved, its suspension not yet written
    let second = worker(&redis.url(), "nap");
    wait_until("the job to be parked", Duration::from_secs(20), || async {
        matches!(
            client.status(&jid).await.unwrap(),
            JobStatus::Suspended { .. }
        )
    })
    .await;
    kill(second); // while the job is parked: it is in no process
    let third = worker(&redis.url(), "nap");
    done(&client, &jid).await;
    drop(third);

    let seen = all_effects(&redis, 4);
    assert_eq!(seen.get("before"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("after"), Some(&1), "{seen:?}");
    // The killed run, the run that parked it, the run after the sleep.
    assert_eq!(seen.get("sleep-call"), Some(&3), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspension_written_after_its_worker_was_killed_parks_the_job_which_wakes_once() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let (jid, proxy) = kill_during_suspend(&redis, &client, 5).await;
    proxy.heal();
    // Parked by the write that reached Redis after its process died (no worker is left to
    // wake it yet).
    wait_until("the job to be parked", Duration::from_secs(10), || async {
        matches!(
            client.status(&jid).await.unwrap(),
            JobStatus::Suspended { .. }
        )
    })
    .await;
    assert_eq!(in_flight(&redis), "", "a parked job is in no process");
    let successor = worker(&redis.url(), "nap-5");
    done(&client, &jid).await;
    drop(successor);

    let seen = all_effects(&redis, 5);
    assert_eq!(seen.get("before"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("after"), Some(&1), "{seen:?}");
    assert_eq!(
        seen.get("sleep-call"),
        Some(&2),
        "the run that parked it and the run after its one sleep: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspension_lost_with_its_killed_worker_leaves_the_job_to_run_again_and_sleep_once() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let (jid, proxy) = kill_during_suspend(&redis, &client, 6).await;
    drop(proxy);
    let saved = in_flight(&redis);
    assert!(
        saved.contains(r#""sleeps":0"#) || !saved.contains("sleeps"),
        "not parked: {saved}"
    );
    let successor = worker(&redis.url(), "nap-6");
    done(&client, &jid).await;
    drop(successor);

    let seen = all_effects(&redis, 6);
    assert_eq!(seen.get("before"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("after"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("sleep-call"), Some(&3), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeper_killed_as_it_wakes_does_not_sleep_again_and_runs_each_step_once() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let jid = DurableNap::call(7, 500, holds(&["woke"]), UNTIL_KILLED)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let first = worker(&redis.url(), "wake");
    reached(&redis, 7, "woke").await; // promoted, fetched, past its sleep
    kill(first);
    let second = worker(&redis.url(), "wake");
    done(&client, &jid).await;
    drop(second);

    let seen = all_effects(&redis, 7);
    assert_eq!(seen.get("before"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("after"), Some(&1), "{seen:?}");
    // The run that parked it, the one killed as it woke, the one that finished: a fourth
    // would be a second sleep.
    assert_eq!(seen.get("sleep-call"), Some(&3), "{seen:?}");
}

// Found by the chaos suite: an iteration that ended between two saves of its cursor left it
// behind its last items, and the run after a sleep that followed ran them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_iteration_done_before_a_sleep_runs_none_of_its_items_again_after_it() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    // Ten items saved every three: the last save is at item 9, and item 9 ends the iteration.
    let jid = DurableWalkThenNap::call(8, 10, 3, 200)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let worker = worker(&redis.url(), "walk-nap");
    done(&client, &jid).await;
    drop(worker);

    let seen = all_effects(&redis, 8);
    for item in 0..10 {
        assert_eq!(
            seen.get(&format!("item{item}")),
            Some(&1),
            "each item once: {seen:?}"
        );
    }
    assert_eq!(seen.get("after"), Some(&1), "{seen:?}");
}

/// Items of the long iteration, and how often it saves its cursor.
const ITEMS: u64 = 100_000;
const EVERY: u64 = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "about a minute: cargo test -p gator-tests --test durable_crashes -- --ignored --nocapture"]
async fn a_100k_item_iteration_killed_every_two_seconds_runs_every_item_repeating_at_most_a_checkpoint_interval_a_kill()
 {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let jid = DurableWalk::call(9, ITEMS, EVERY)
        .through(&client)
        .dispatch()
        .await
        .unwrap();
    let started = Instant::now();
    let mut kills = 0u64;
    loop {
        let running = worker(&redis.url(), "walk");
        let until = Instant::now() + Duration::from_millis(1500 + (kills * 389) % 1000);
        let mut finished = false;
        while Instant::now() < until && !finished {
            tokio::time::sleep(Duration::from_millis(50)).await;
            finished = matches!(client.status(&jid).await.unwrap(), JobStatus::Done { .. });
        }
        if finished {
            drop(running);
            break;
        }
        kill(running);
        kills += 1;
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "not done after 10 minutes and {kills} kills"
        );
    }
    let took = started.elapsed();
    let counts: HashMap<u64, u64> = redis::cmd("HGETALL")
        .arg("durable:items:9")
        .query_async(&mut redis.client().await)
        .await
        .unwrap();
    let missing = (0..ITEMS).filter(|i| !counts.contains_key(i)).count();
    let repeated: u64 = counts.values().map(|n| n - 1).sum();
    let most = counts.values().max().copied().unwrap_or(0);
    eprintln!(
        "durable: {ITEMS} items, {kills} kills, {repeated} items repeated ({:.1} a kill, at most \
         {EVERY} allowed), an item ran at most {most} times, took {:.1} s",
        repeated as f64 / kills.max(1) as f64,
        took.as_secs_f64()
    );
    assert_eq!(missing, 0, "every item ran");
    assert!(kills > 0, "the job finished before the first kill");
    assert!(
        repeated <= kills * EVERY,
        "{repeated} items repeated after {kills} kills: more than one checkpoint interval ({EVERY}) a kill"
    );
}
