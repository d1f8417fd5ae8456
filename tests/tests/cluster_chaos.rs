//! Cluster chaos: on a 3-master cluster with a replica each, jobs on three queues (one per
//! master), on a queue sharded 6 ways, and chains and fan-out workflows whose steps cross
//! masters, all reach their
//! outcome while worker processes are SIGKILLed and a master is killed and failed over.
//! Ignored by default (about a minute on 2 cores); CI runs it with
//! `cargo test -p gator-tests --test cluster_chaos -- --ignored --nocapture`.
//!
//! 1. `RedisCluster::start(3, 1)`: AOF `everysec`, node timeout 2 s.
//! 2. Three `gator-test-worker` processes on the queues, with `--wait-replicas 1`: a chain
//!    step handed to another master is deleted from its chain's list only once a replica has
//!    it, so a failover of the next queue's master cannot lose it. Leases of 5 s.
//! 3. Jobs dispatched with `wait_for_replicas(1, ..)` (an `Ok` survives a failover): plain jobs
//!    on the three queues, jobs placed by shard key on `cc-hot` (6 shards), and chains of three
//!    steps, each step on another queue. Each run is counted in `{cchaos}:runs`, a key on a
//!    master the chaos leaves alone (it is the test's instrument, not the system under test).
//!    One plain job in forty is durable instead (a step, ten items with their cursor saved
//!    every three, a sleep of 100–500 ms, a step), counting each step and item by attempt
//!    and pid (`{cchaos}:durable`, `{cchaos}:durable_by_pid`).
//! 4. Five events in a random order, 0.3–1.2 s apart: four SIGKILLs of a random worker, each
//!    respawned at once, and a SIGKILL of a master that holds one of the queues and shards of
//!    `cc-hot`. Its replica takes over; the killed node restarts and rejoins as a replica.
//! 5. Waits until every job ran, then checks: every dead set is empty, every chain ran in
//!    order, every workflow's fan-in ran after its parents with their results and the workflow
//!    is done, and the workers stop cleanly.
//! 6. Counts the attempts run twice (each run records `<id>:<attempt>` and the pid that ran
//!    it), by cause: run in a killed worker; in flight on the failed master's queues when it
//!    was killed (read with every worker frozen); anything else, of which there must be none.
//!    The same for the durable jobs' steps and items run again in one attempt, and a kill,
//!    or a save lost with the failed master, repeats at most one step and one checkpoint
//!    interval of items: an attempt that meets both, twice that.
//!
//! `CHAOS_SEED=<n>` replays the order and timing of the events.

use gator_core::workflow::WorkflowState;
use gator_core::{Chain, Client, Workflow, job};
use gator_tests::chaos::{Rng, chain_order, durable_repeats, fan_in_order};
use gator_tests::{RedisCluster, WorkerCommand, WorkerProcess, signal, terminate};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

const PLAIN: u64 = 16_000;
const CHAINS: u64 = 150;
const STEPS: u64 = 3;
/// Fan-out workflows of five steps (a root, three in parallel, a fan-in), each step on the
/// next queue, so every hand-off crosses masters.
const WORKFLOWS: u64 = 60;
const WF_STEPS: u64 = 5;
const HOT: &str = "cc-hot";
const HOT_SHARDS: u32 = 6;
const WORKERS: usize = 3;
const WORKER_KILLS: usize = 4;
const RUNS: &str = "{cchaos}:runs";
const DRAIN_DEADLINE: Duration = Duration::from_secs(180);

// Declared here only to dispatch them: the worker binary runs them (tests/src/bin).
#[job(queue = "cc-0")]
async fn cc_plain(_id: u64) {}

#[job(queue = "cc-0")]
async fn cc_step(_chain: u64, _step: u32, _id: u64) {}

#[job(queue = "cc-0")]
async fn cc_wf_step(_wf: u64, _step: u32, _id: u64) {}

#[job(queue = "cc-0")]
async fn cc_durable(_id: u64) {}

/// A durable job's iteration saves its cursor every this many items (as the worker binary's
/// `cc_durable` does): a kill repeats at most this many.
const DURABLE_EVERY: u64 = 3;

#[derive(Debug, Clone, Copy)]
enum Event {
    KillWorker,
    FailOverMaster,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "cluster chaos: run with cargo test -p gator-tests --test cluster_chaos -- --ignored --nocapture"]
async fn every_job_reaches_its_outcome_through_worker_kills_and_a_master_failover() {
    let (mut rng, seed) = Rng::seeded();
    eprintln!("cluster chaos: seed {seed} (CHAOS_SEED={seed} replays the events)");
    let mut cluster = RedisCluster::start(3, 1);
    let queues = one_queue_per_master(&cluster, "cc");
    // The workflows' queues: one per master too, without a backlog, so that their steps hand
    // off to each other all through the chaos.
    let wf_queues = one_queue_per_master(&cluster, "ccw");
    let runs_node = cluster.master_of(RUNS);
    // The victim: a master with a queue of its own, but not the one that counts the runs.
    let victim_queue = queues
        .iter()
        .find(|q| cluster.master_of(&format!("gator:{{{q}}}:queue")) != runs_node)
        .expect("a queue on another master than the runs")
        .clone();

    let client = Client::builder(cluster.url())
        .wait_for_replicas(1, Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    gator_core::Admin::new(client.clone())
        .set_shards(HOT, HOT_SHARDS)
        .await
        .unwrap();
    let spec = format!("{},{HOT},{}", queues.join(","), wf_queues.join(","));
    let mut fleet: Vec<WorkerProcess> = (0..WORKERS)
        .map(|_| worker(&cluster, &spec).spawn())
        .collect();

    let started = Instant::now();
    let workflows = tokio::spawn(dispatch_workflows(client.clone(), wf_queues.clone()));
    let total = enqueue(&client, &queues).await;
    let durables = (CHAINS * STEPS + WORKFLOWS * WF_STEPS..total)
        .filter(|id| id % 40 == 1)
        .count() as u64;
    let victim_holds_hot = (0..HOT_SHARDS)
        .filter(|i| {
            cluster.master_of(&format!("gator:{{{HOT}#{i}}}:queue"))
                == cluster.master_of(&format!("gator:{{{victim_queue}}}:queue"))
        })
        .count();
    eprintln!(
        "cluster chaos: {total} jobs on {queues:?} and {HOT} ({HOT_SHARDS} shards, {victim_holds_hot} on the victim's master), {CHAINS} chains of {STEPS}"
    );

    let mut events = vec![Event::KillWorker; WORKER_KILLS];
    events.push(Event::FailOverMaster);
    for i in (1..events.len()).rev() {
        events.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut timeline = Vec::new();
    let mut killed_pids = HashSet::new();
    let mut failover_ids = HashSet::new();
    for event in events {
        tokio::time::sleep(rng.millis(300, 1200)).await;
        let left = total.saturating_sub(ran(&client).await);
        timeline.push((event, left));
        match event {
            Event::KillWorker => {
                let slot = rng.below(WORKERS as u64) as usize;
                killed_pids.insert(fleet[slot].0.id());
                let _ = fleet[slot].0.kill();
                let _ = fleet[slot].0.wait();
                fleet[slot] = worker(&cluster, &spec).spawn();
            }
            Event::FailOverMaster => {
                let victim = cluster.master_of(&format!("gator:{{{victim_queue}}}:queue"));
                // Frozen, so the in-flight lists are read as they are when the master dies.
                let pids: Vec<u32> = fleet.iter().map(|w| w.0.id()).collect();
                for pid in &pids {
                    signal("-STOP", *pid);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                let on_victim: Vec<String> = all_queues(&queues, &wf_queues)
                    .filter(|q| cluster.master_of(&format!("gator:{{{q}}}:queue")) == victim)
                    .collect();
                failover_ids = in_flight(&client, &on_victim).await;
                tokio::task::block_in_place(|| {
                    cluster.kill(victim);
                    for pid in &pids {
                        signal("-CONT", *pid);
                    }
                    fail_over(&mut cluster, victim)
                });
            }
        }
    }
    eprintln!("cluster chaos: events (jobs not yet run): {timeline:?}");
    let workflows = workflows.await.expect("the workflows' dispatcher");
    let undispatched: Vec<u64> = workflows
        .iter()
        .enumerate()
        .filter(|(_, id)| id.is_none())
        .flat_map(|(w, _)| (0..WF_STEPS).map(move |s| CHAINS * STEPS + w as u64 * WF_STEPS + s))
        .collect();
    let total_promised = total - undispatched.len() as u64;
    assert!(
        timeline.last().is_some_and(|(_, left)| *left > 0),
        "every job had run before the last event: the chaos hit an idle system"
    );

    let mut done = 0;
    let deadline = Instant::now() + DRAIN_DEADLINE;
    while Instant::now() < deadline {
        done = ran(&client).await;
        if done >= total_promised {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let runs: HashMap<u64, u64> = query(&client, redis::cmd("HGETALL").arg(RUNS)).await;
    let missing: Vec<u64> = (0..total)
        .filter(|id| !runs.contains_key(id) && !undispatched.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {total} jobs never ran {DRAIN_DEADLINE:?} after the chaos ({done} did), first 20: {:?}",
        missing.len(),
        &missing[..missing.len().min(20)]
    );
    let mut dead = Vec::new();
    for queue in all_queues(&queues, &wf_queues) {
        let n: u64 = query(
            &client,
            redis::cmd("ZCARD").arg(format!("gator:{{{queue}}}:dead")),
        )
        .await;
        if n > 0 {
            dead.push((queue, n));
        }
    }
    assert!(dead.is_empty(), "jobs died: {dead:?}");
    let mut chain_duplicates = 0;
    for c in 0..CHAINS {
        let steps: Vec<u32> = query(
            &client,
            redis::cmd("LRANGE")
                .arg(format!("{{cchaos}}:chain:{c}"))
                .arg(0)
                .arg(-1),
        )
        .await;
        chain_duplicates +=
            chain_order(&steps, STEPS as u32).unwrap_or_else(|e| panic!("chain {c}: {e}"));
    }
    for (w, id) in workflows.iter().enumerate() {
        let steps: Vec<u32> = query(
            &client,
            redis::cmd("LRANGE")
                .arg(format!("{{cchaos}}:wf:{w}"))
                .arg(0)
                .arg(-1),
        )
        .await;
        let Some(id) = id else {
            continue; // its dispatch failed during the failover: it promised nothing
        };
        chain_duplicates += fan_in_order(&steps, 3).unwrap_or_else(|e| panic!("workflow {w}: {e}"));
        let status = client.workflow_status(id).await.unwrap();
        let state = status.as_ref().map(|s| s.state);
        assert_eq!(
            state,
            Some(WorkflowState::Done),
            "workflow {id}: {status:?}"
        );
    }
    let short: Vec<u64> = query(&client, redis::cmd("SMEMBERS").arg("{cchaos}:wf:short")).await;
    assert!(
        short.is_empty(),
        "fan-ins without their parents' results: {short:?}"
    );
    let statuses: Vec<_> = fleet.iter_mut().map(|w| terminate(&mut w.0)).collect();
    assert!(
        statuses.iter().all(|s| s.success()),
        "workers did not stop cleanly: {statuses:?}"
    );
    let duplicates: u64 = runs.values().map(|n| n - 1).sum();
    // Attempts Gator ran twice (`<id>:<attempt>` counted twice): a job that failed after its
    // own record was applied records its retry under the next attempt, not here.
    let by_attempt: HashMap<String, u64> = query(
        &client,
        redis::cmd("HGETALL").arg(format!("{RUNS}_by_attempt")),
    )
    .await;
    let by_pid: HashMap<String, u64> =
        query(&client, redis::cmd("HGETALL").arg(format!("{RUNS}_by_pid"))).await;
    let repeated = Repeated::count(&by_attempt, &by_pid, &killed_pids, &failover_ids);
    let durable = durable_repeats(
        &query(&client, redis::cmd("HGETALL").arg("{cchaos}:durable")).await,
        &query(
            &client,
            redis::cmd("HGETALL").arg("{cchaos}:durable_by_pid"),
        )
        .await,
        &killed_pids,
        |id, _| failover_ids.contains(&id),
        DURABLE_EVERY,
    );
    eprintln!(
        "cluster chaos: all {total} jobs ran in {:.1} s, 0 dead; {duplicates} duplicate runs \
         ({chain_duplicates} of chain and workflow steps); attempts run twice: {repeated:?} \
         ({} jobs in flight on the failed master); {} durable jobs, repeated in one attempt: \
         steps {:?}, items {:?}",
        started.elapsed().as_secs_f64(),
        failover_ids.len(),
        durable.jobs,
        durable.steps,
        durable.items,
    );
    println!(
        "RESULT cluster_chaos {}",
        serde_json::json!({
            "duplicates": duplicates,
            "attempts_run_twice": repeated.killed + repeated.failover + repeated.other,
            "attempts_run_twice_in_killed_workers": repeated.killed,
            "attempts_run_twice_on_the_failed_master": repeated.failover,
            "attempts_run_twice_elsewhere": repeated.other,
            "in_flight_on_the_failed_master": failover_ids.len(),
            "durable_jobs": durable.jobs,
            "durable_steps_repeated_in_killed_workers": durable.steps.killed,
            "durable_steps_repeated_on_the_failed_master": durable.steps.outage,
            "durable_steps_repeated_elsewhere": durable.steps.other,
            "durable_items_repeated_in_killed_workers": durable.items.killed,
            "durable_items_repeated_on_the_failed_master": durable.items.outage,
            "durable_items_repeated_elsewhere": durable.items.other,
        })
    );
    assert_eq!(
        repeated.other, 0,
        "attempts run twice neither in a killed worker nor in flight on the failed master \
         (runs by attempt and pid: {RUNS}_by_attempt, {RUNS}_by_pid)"
    );
    // A durable job's step or item runs again in the same attempt only if its process died
    // after it ran and before it was saved, or its save was lost with the failed master: at
    // most a step and one checkpoint interval of items for each.
    assert_eq!(
        (durable.steps.other, durable.items.other),
        (0, 0),
        "durable steps and items run twice in one attempt neither in a killed worker nor on \
         the failed master: {durable:?} ({{cchaos}}:durable, {{cchaos}}:durable_by_pid)"
    );
    assert!(
        durable.over_bound.is_empty(),
        "durable jobs repeated more than a step and {DURABLE_EVERY} items a kill or a lost \
         save: {:?}",
        durable.over_bound
    );
    assert_eq!(durable.jobs, durables, "every durable job ran");
}

/// Attempts run more than once, by cause.
#[derive(Debug, Default)]
struct Repeated {
    /// One of its runs was in a worker that was then killed.
    killed: u64,
    /// In flight on the failed master's queues when it was killed.
    failover: u64,
    /// Anything else.
    other: u64,
}

impl Repeated {
    /// From the runs by attempt (`<id>:<attempt>` → runs) and by pid
    /// (`<id>:<attempt>:<pid>` → runs).
    fn count(
        by_attempt: &HashMap<String, u64>,
        by_pid: &HashMap<String, u64>,
        killed_pids: &HashSet<u32>,
        failover_ids: &HashSet<u64>,
    ) -> Repeated {
        let in_killed: HashSet<&str> = by_pid
            .keys()
            .filter_map(|key| {
                let (attempt, pid) = key.rsplit_once(':')?;
                killed_pids.contains(&pid.parse().ok()?).then_some(attempt)
            })
            .collect();
        let mut repeated = Repeated::default();
        for (key, n) in by_attempt.iter().filter(|(_, n)| **n > 1) {
            let id: Option<u64> = key.split(':').next().and_then(|id| id.parse().ok());
            if in_killed.contains(key.as_str()) {
                repeated.killed += n - 1;
            } else if id.is_some_and(|id| failover_ids.contains(&id)) {
                repeated.failover += n - 1;
            } else {
                repeated.other += n - 1;
            }
        }
        repeated
    }
}

/// Every queue of the suite: the three plain ones, the workflows' three, the hot one's shards.
fn all_queues<'a>(
    queues: &'a [String],
    wf_queues: &'a [String],
) -> impl Iterator<Item = String> + 'a {
    queues
        .iter()
        .chain(wf_queues)
        .cloned()
        .chain((0..HOT_SHARDS).map(|i| format!("{HOT}#{i}")))
}

/// The test's ids of the jobs in every in-flight list of `queues` (found through each queue's
/// lease set): the last argument of each payload.
async fn in_flight(client: &Client, queues: &[String]) -> HashSet<u64> {
    let mut ids = HashSet::new();
    for queue in queues {
        let processes: Vec<String> = query(
            client,
            redis::cmd("ZRANGE")
                .arg(format!("gator:{{{queue}}}:leases"))
                .arg(0)
                .arg(-1),
        )
        .await;
        for process in processes {
            let jobs: Vec<Vec<u8>> = query(
                client,
                redis::cmd("LRANGE")
                    .arg(format!("gator:{{{queue}}}:inflight:{process}"))
                    .arg(0)
                    .arg(-1),
            )
            .await;
            ids.extend(jobs.iter().filter_map(|job| {
                let job: serde_json::Value = serde_json::from_slice(job).ok()?;
                job["args"].as_array()?.last()?.as_u64()
            }));
        }
    }
    ids
}

/// Three queue names `<prefix>-<n>` whose keys live on three different masters.
fn one_queue_per_master(cluster: &RedisCluster, prefix: &str) -> Vec<String> {
    let mut by_master: Vec<(u16, String)> = Vec::new();
    for i in 0.. {
        let queue = format!("{prefix}-{i}");
        let master = cluster.master_of(&format!("gator:{{{queue}}}:queue"));
        if !by_master.iter().any(|(m, _)| *m == master) {
            by_master.push((master, queue));
        }
        if by_master.len() == 3 {
            break;
        }
    }
    by_master.into_iter().map(|(_, q)| q).collect()
}

fn worker(cluster: &RedisCluster, queues: &str) -> WorkerCommand {
    WorkerCommand::new(
        env!("CARGO_BIN_EXE_gator-test-worker"),
        &cluster.url(),
        queues,
    )
    .args(&[
        "--concurrency",
        "10",
        "--lease",
        "5s",
        "--wait-replicas",
        "1",
        "--wait-timeout",
        "2s",
    ])
}

/// Dispatches the chains (ids `chain × 3 + step − 1`, each step on the next queue), then the
/// plain jobs (ids after the workflows'), a quarter of them on the sharded queue by shard key.
/// Returns how many jobs, the workflows' steps included.
async fn enqueue(client: &Client, queues: &[String]) -> u64 {
    for c in 0..CHAINS {
        let step = |s: u64| {
            let queue = &queues[((c + s) % 3) as usize];
            CcStep::call(c, s as u32, c * STEPS + s - 1).queue(queue.as_str())
        };
        Chain::new()
            .then(step(1))
            .then(step(2))
            .then(step(3))
            .through(client)
            .dispatch()
            .await
            .expect("dispatch a chain");
    }
    let first = CHAINS * STEPS + WORKFLOWS * WF_STEPS;
    let ids: Vec<u64> = (first..first + PLAIN).collect();
    for batch in ids.chunks(500) {
        client
            .dispatch_many(batch.iter().filter(|id| *id % 40 != 1).map(|id| {
                let job = CcPlain::call(*id);
                if id % 4 == 0 {
                    job.queue(HOT).shard_key((id % 50).to_string())
                } else {
                    job.queue(queues[(id % 3) as usize].as_str())
                }
            }))
            .await
            .expect("dispatch plain jobs");
        // One in forty is durable (a step, ten items, a short sleep, a step).
        client
            .dispatch_many(
                (batch.iter().filter(|id| *id % 40 == 1))
                    .map(|id| CcDurable::call(*id).queue(queues[(id % 3) as usize].as_str())),
            )
            .await
            .expect("dispatch durable jobs");
    }
    first + PLAIN
}

/// Dispatches [`WORKFLOWS`] fan-out workflows, 60 ms apart so that they start all through the
/// chaos (ids after the chains'): step `s` of workflow `w` on queue `(w + s) % 3` of
/// `queues`, so every hand-off crosses masters. Returns their ids; `None` where the dispatch
/// failed (during the failover), which promises nothing.
async fn dispatch_workflows(client: Client, queues: Vec<String>) -> Vec<Option<String>> {
    let mut ids = Vec::new();
    for w in 0..WORKFLOWS {
        tokio::time::sleep(Duration::from_millis(60)).await;
        let step = |s: u64| {
            let queue = &queues[((w + s) % 3) as usize];
            let id = CHAINS * STEPS + w * WF_STEPS + s - 1;
            CcWfStep::call(w, s as u32, id).queue(queue.as_str())
        };
        let workflow = Workflow::new()
            .then(step(1))
            .then_all([step(2), step(3), step(4)])
            .then(step(5));
        match workflow.through(&client).dispatch().await {
            Ok(id) => ids.push(Some(id)),
            Err(e) => {
                eprintln!("cluster chaos: the dispatch of workflow {w} failed: {e}");
                ids.push(None);
            }
        }
    }
    ids
}

/// Once the master on `victim` was killed: waits until its replica has taken over and the
/// cluster is healthy, then restarts it (it rejoins as a replica) and waits until every master has a
/// replica in sync again.
fn fail_over(cluster: &mut RedisCluster, victim: u16) {
    let at = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster.masters().contains(&victim) || cluster.masters().len() < 3 {
        assert!(
            Instant::now() < deadline,
            "no replica took over from {victim}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    cluster.wait_until_healthy();
    let promoted = at.elapsed();
    cluster.restart(victim);
    cluster.wait_until_replicated(1);
    eprintln!(
        "cluster chaos: master {victim} killed; its replica took over in {:.1} s; back as a replica after {:.1} s",
        promoted.as_secs_f64(),
        at.elapsed().as_secs_f64()
    );
}

async fn ran(client: &Client) -> u64 {
    query(client, redis::cmd("HLEN").arg(RUNS)).await
}

async fn query<T: redis::FromRedisValue>(client: &Client, cmd: &mut redis::Cmd) -> T {
    let mut conn = client.connection();
    for _ in 0..50 {
        match cmd.query_async(&mut conn).await {
            Ok(value) => return value,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    cmd.query_async(&mut conn)
        .await
        .expect("a query of the chaos records")
}
