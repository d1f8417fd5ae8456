//! Jobs scheduled beyond the horizon wait in one list per minute of their due time
//! (`store::later`), not in the scheduled set: what a user sees of them is the same (status,
//! counts, pages, search, run now, delete, cancel), they run on time and once, and they cost
//! about what the same jobs queued would.
//!
//! The tests that must see jobs go through the lists without waiting minutes run with the
//! horizon at one second (`GATOR_LATER_AFTER_MS`), in a process of their own.

use gator_core::admin::{Place, SearchQuery};
use gator_core::payload::now_ms;
use gator_core::{Admin, Client, JobStatus, SetKind, job};
use gator_tests::{RedisServer, ServerOptions, TestWorker, client, wait_until};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

static RUNS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// Records when it ran against when it was due.
#[job(queue = "remind")]
async fn remind(due_ms: u64) {
    RUNS.lock().unwrap().push((due_ms, now_ms()));
}

#[job(queue = "digest")]
async fn digest(_n: u64) {}

/// Runs `test` (named `name`) on a runtime of its own with the horizon at one second: in this
/// test binary run again for that test alone with `GATOR_LATER_AFTER_MS=1000` set, since the
/// horizon is read once per process and the environment cannot be changed safely once
/// threads run.
fn with_short_horizon(name: &str, test: impl AsyncFnOnce()) {
    if std::env::var("GATOR_LATER_AFTER_MS").is_ok() {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
            .block_on(test());
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads", "1"])
        .env("GATOR_LATER_AFTER_MS", "1000")
        .status()
        .expect("the test binary runs");
    assert!(
        status.success(),
        "{name} with a one-second horizon: {status}"
    );
}

/// Dispatches `Remind` jobs due `from_ms`, `from_ms + step_ms`, ... from now on Redis's clock.
async fn remind_at(client: &Client, n: u64, from_ms: u64, step_ms: u64) -> Vec<String> {
    let now = client.redis_time().await.unwrap();
    let mut jids = Vec::new();
    for i in 0..n {
        let due = now + from_ms + i * step_ms;
        let at = UNIX_EPOCH + Duration::from_millis(due);
        jids.push(
            Remind::call(due)
                .at(at)
                .through(client)
                .dispatch()
                .await
                .unwrap(),
        );
    }
    jids
}

fn used_memory(redis: &RedisServer) -> u64 {
    let info = redis.cli(&["INFO", "memory"]);
    let line = info
        .lines()
        .find(|l| l.starts_with("used_memory:"))
        .unwrap();
    line["used_memory:".len()..].trim().parse().unwrap()
}

/// Issue 49's measure (`gator-bench scheduled`'s, a no-op job with a small argument): a
/// backlog scheduled a day ahead, spread over minutes as an app writes one, costs at most 200
/// bytes of Redis a job, status record included (294 in the scheduled set), and each job
/// still answers its status with its due time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_scheduled_a_day_ahead_costs_at_most_200_bytes_a_job() {
    let redis = RedisServer::start_single();
    let client = client(&redis.url()).await;
    let day = Duration::from_secs(86_400);
    let first = Digest::call(0).after(day).through(&client).dispatch().await;
    let before = used_memory(&redis);
    let n = 20_000u64;
    let mut jids = vec![first.unwrap()];
    for i in 1..=n {
        // One every 10 ms: the backlog spans four minutes.
        let due = day + Duration::from_millis(i * 10);
        let job = Digest::call(i).after(due).through(&client);
        jids.push(job.dispatch().await.unwrap());
    }
    let per_job = (used_memory(&redis) - before) / n;
    assert!(per_job <= 200, "{per_job} bytes a scheduled job");
    let admin = Admin::new(client.clone());
    let scheduled = admin.set_len(SetKind::Scheduled, Some("digest")).await;
    assert_eq!(scheduled.unwrap(), n as usize + 1);
    for jid in [&jids[0], &jids[12_345], &jids[20_000]] {
        assert!(matches!(
            client.status(jid).await.unwrap(),
            JobStatus::Scheduled { .. }
        ));
    }
}

/// Jobs due past the horizon go through the lists, run once each and never before their due
/// time, while the page of the scheduled set, its count and a search show them until then.
#[test]
fn jobs_beyond_the_horizon_are_listed_counted_found_and_run_once_on_time() {
    let name = "jobs_beyond_the_horizon_are_listed_counted_found_and_run_once_on_time";
    with_short_horizon(name, async || {
        let redis = RedisServer::start();
        let client = client(&redis.url()).await;
        let admin = Admin::new(client.clone());
        // Due in 3 to 5 s: past the 1 s horizon, so in the lists.
        let jids = remind_at(&client, 40, 3_000, 50).await;
        let remind = Some("remind");
        assert_eq!(admin.set_len(SetKind::Scheduled, remind).await.unwrap(), 40);
        let page = admin
            .set_page(SetKind::Scheduled, remind, None, 100)
            .await
            .unwrap();
        let listed: BTreeSet<&str> = page.entries.iter().filter_map(|e| e.jid()).collect();
        assert_eq!(listed, jids.iter().map(String::as_str).collect());
        for entry in &page.entries {
            let due = entry.payload.as_ref().unwrap().args[0].as_u64().unwrap();
            assert_eq!(entry.score_ms, due, "each listed with its own due time");
        }
        let mut query = SearchQuery::new(&jids[17]);
        query.places = vec![Place::Scheduled];
        let found = admin.search(&query).await.unwrap();
        assert_eq!(found.hits.len(), 1, "{found:?}");
        assert_eq!(found.hits[0].jid.as_deref(), Some(jids[17].as_str()));

        let worker = TestWorker::start(&redis.url(), Some("remind"), 4);
        wait_until("40 reminders run", Duration::from_secs(20), || async {
            RUNS.lock().unwrap().len() >= 40
        })
        .await;
        // Settled by now; a second run would show here.
        tokio::time::sleep(Duration::from_millis(300)).await;
        worker.stop().await;
        let runs = RUNS.lock().unwrap().clone();
        assert_eq!(runs.len(), 40, "each ran once");
        let early: Vec<_> = runs.iter().filter(|(due, ran)| ran < due).collect();
        assert!(early.is_empty(), "ran before their due time: {early:?}");
        assert_eq!(admin.set_len(SetKind::Scheduled, remind).await.unwrap(), 0);
    });
}

/// Pages of the scheduled set go through the set's entries and the lists' merged, by score,
/// over two queues, each job once; bulk actions reach the jobs in the lists.
#[test]
fn pages_and_bulk_actions_go_through_the_set_and_the_lists() {
    let name = "pages_and_bulk_actions_go_through_the_set_and_the_lists";
    with_short_horizon(name, async || {
        let redis = RedisServer::start();
        let client = client(&redis.url()).await;
        let admin = Admin::new(client.clone());
        let now = client.redis_time().await.unwrap();
        let mut all = BTreeSet::new();
        // Within the horizon (the set) and beyond it (the lists), interleaved in due time, in
        // two queues.
        for i in 0..60u64 {
            let due = now + 600_000 + i * 7_000;
            let at = UNIX_EPOCH + Duration::from_millis(due);
            let jid = Remind::call(due).at(at).through(&client).dispatch().await;
            all.insert(jid.unwrap());
            let soon = Digest::call(i).after(Duration::from_millis(900));
            all.insert(soon.through(&client).dispatch().await.unwrap());
        }
        // Another producer's jobs, written straight into the set (docs/wire-format.md) far
        // ahead, between the lists' minutes and at one of their starts.
        let minute = (now + 600_000) / 60_000 * 60_000 + 120_000;
        for (i, due) in [now + 603_500, now + 700_000, minute, minute + 1]
            .iter()
            .enumerate()
        {
            let jid = format!("0190a5c8-0000-7000-8000-00000000000{i}");
            let payload = serde_json::json!({"jid": jid, "job": "remind", "args": [due],
                "queue": "remind", "created_at": now, "enqueued_at": due, "attempt": 0});
            let (score, member) = (due.to_string(), payload.to_string());
            redis.cli(&["ZADD", "gator:{remind}:scheduled", &score, &member]);
            all.insert(jid);
        }
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut last_score = f64::MIN;
        loop {
            let page = admin
                .set_page(SetKind::Scheduled, None, cursor.as_deref(), 7)
                .await
                .unwrap();
            for entry in &page.entries {
                assert!(entry.score >= last_score, "pages run by score");
                last_score = entry.score;
                seen.push(entry.jid().unwrap().to_owned());
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen.len(), 124, "each job once");
        assert_eq!(seen.iter().cloned().collect::<BTreeSet<_>>(), all);

        // By offset, as the dashboard's page numbers read: the same order as the cursor's.
        let remind = Some("remind");
        let first = admin.set_page(SetKind::Scheduled, remind, None, 30).await;
        let by_offset = admin.list_set(SetKind::Scheduled, remind, 10, 20).await;
        let jids = |entries: &[gator_core::SetEntry]| -> Vec<String> {
            entries
                .iter()
                .map(|e| e.jid().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            jids(&by_offset.unwrap()),
            jids(&first.unwrap().entries[10..])
        );
        let cleared = admin.clear_set(SetKind::Scheduled, Some("remind")).await;
        assert_eq!(cleared.unwrap(), 64);
        assert_eq!(
            admin
                .set_len(SetKind::Scheduled, Some("remind"))
                .await
                .unwrap(),
            0
        );
        let digest = Some("digest");
        assert_eq!(
            admin.run_all_now(SetKind::Scheduled, digest).await.unwrap(),
            60
        );
        assert_eq!(admin.set_len(SetKind::Scheduled, digest).await.unwrap(), 0);
    });
}

/// A restarted Redis has forgotten the page's script: the next page loads it again, and the
/// jobs in the lists are still there and still run.
#[test]
fn after_a_redis_restart_the_lists_are_paged_and_promoted_as_before() {
    let name = "after_a_redis_restart_the_lists_are_paged_and_promoted_as_before";
    with_short_horizon(name, async || {
        let mut redis = RedisServer::start_with(ServerOptions {
            appendonly: true,
            fsync_always: true,
            ..ServerOptions::default()
        });
        let client = client(&redis.url()).await;
        let admin = Admin::new(client.clone());
        remind_at(&client, 10, 4_000, 10).await;
        let remind = Some("remind");
        assert_eq!(
            admin
                .set_page(SetKind::Scheduled, remind, None, 50)
                .await
                .unwrap()
                .entries
                .len(),
            10
        );
        redis.restart();
        wait_until("Redis back", Duration::from_secs(10), || async {
            client.redis_time().await.is_ok()
        })
        .await;
        let page = admin.set_page(SetKind::Scheduled, remind, None, 50).await;
        assert_eq!(page.unwrap().entries.len(), 10);
        let worker = TestWorker::start(&redis.url(), Some("remind"), 2);
        wait_until("10 reminders run", Duration::from_secs(20), || async {
            RUNS.lock().unwrap().len() >= 10
        })
        .await;
        worker.stop().await;
    });
}
