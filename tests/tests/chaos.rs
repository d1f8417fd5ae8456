//! Chaos: 20,000 jobs all reach their outcome while worker processes are SIGKILLed, Redis is
//! frozen, killed and filled to its memory limit, and a worker's connections go silent.
//! Ignored by default (one to two minutes on 2 cores); CI runs it with
//! `cargo test -p gator-tests --test chaos -- --ignored --nocapture`.
//!
//! 1. A private redis-server with AOF and `appendfsync always` (see [`redis_server`]).
//! 2. Three `gator-test-worker` processes on `chaos-high:3,chaos-default:2,chaos-low:1`, each
//!    odd in its own way (see [`Fleet::spawn`]): one runs 10,000 processors and restarts under
//!    its `--worker-id`; one's clock is 5 minutes ahead; one reaches Redis through a proxy that
//!    goes silent.
//! 3. 20,000 jobs: plain, flaky (the first attempt fails), scheduled 2–5 s ahead, 300
//!    chains of three steps across the queues, 100 workflows of five steps across the queues
//!    (a root, three in parallel, a fan-in), 300 jobs that wait for a reply the test sends during
//!    the chaos (their handlers count the runs), and about 10 % on `chaos-flow`, a queue under
//!    flow control (limited, with shares and costs, rate limited, windowed, half of them with fair
//!    keys), and about 2.5 % durable jobs (a step, ten items with their cursor saved every
//!    three, a sleep of 100–500 ms, a step). Every job counts its runs in `chaos:runs`.
//!    Two poison payloads besides: bytes that are not UTF-8, and arguments whose decoder panics.
//!    And 2,000 expiring jobs (deadlines 1 to 60 s ahead, dropped once expired), ahead of the
//!    backlog: none may start after its deadline, and each ran or is recorded `expired`.
//! 4. Ten events in a random order, 0.3–1.5 s apart: five SIGKILLs of a random worker, each
//!    respawned at once; Redis frozen with SIGSTOP for 10 s; Redis SIGKILLed and restarted;
//!    the proxied worker's connections silenced; Redis at its memory limit for 3 s; the
//!    proxied worker cut off from Redis (a partition: every connection, open or new) for 26 s,
//!    past its 20 s lease, healed after the last event if not before.
//! 5. Waits until every queue, scheduled set, retry set, in-flight list and chain list is
//!    empty, then checks: every job ran, only the two poison payloads died, chains ran in
//!    order, every workflow's fan-in ran after all its parents and with their results, and every duplicate run is of a job that was in flight in a killed worker or when
//!    Redis went away (at least once, not "at most once"). The latter are jobs whose own write
//!    of their run was applied but timed out: the job failed, as far as Gator knows, and its
//!    retry recorded the run again, under its next attempt. So each run is also counted by
//!    attempt (`chaos:runs_by_attempt`): an attempt run twice is Gator's duplicate, counted by
//!    cause: in flight in a killed worker, in flight in the worker cut off past its lease (its
//!    log must say it dropped their outcomes), or anything else, of which there must be none
//!    (the other outages are shorter than the lease, and an outcome written during one is kept
//!    until Redis answers). No outcome may be given up on. The durable jobs count each step
//!    and item by attempt (`chaos:durable`, with the pids in `chaos:durable_by_pid`): one run
//!    again in the same attempt is counted by the same causes, none may be outside them, and
//!    a kill or a lapse (the worker cut off past its lease) repeats at most one step and one
//!    checkpoint interval of items: an attempt that meets both, twice that.
//!
//! `CHAOS_SEED=<n>` replays the order and timing of the events (the seed is printed).

use gator_core::status::JobStatus;
use gator_core::workflow::WorkflowState;
use gator_core::{Chain, Client, Workflow, job};
use gator_tests::chaos::{DurableRepeats, Rng, chain_order, durable_repeats, fan_in_order};
use gator_tests::{
    RedisServer, ServerOptions, SilentProxy, client, libfaketime, signal, wait_until,
};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tempfile::TempDir;
use tokio::task::JoinSet;

const JOBS: u64 = 20_000;
const CHAINS: u64 = 300;
const STEPS: u64 = 3;
/// Workflows of five steps, each step on another queue: a root, three in parallel, a fan-in.
const WORKFLOWS: u64 = 100;
const WF_STEPS: u64 = 5;
/// Jobs that wait for a reply, which the test sends during the chaos (ids after the
/// workflows'): each reply's handler counts the run.
const WAITS: u64 = 300;
const QUEUES: [&str; 3] = ["chaos-high", "chaos-default", "chaos-low"];
const QUEUE_SPEC: &str =
    "chaos-high:3,chaos-default:2,chaos-low:1,chaos-flow:2,chaos-wf-0:1,chaos-wf-1:1,chaos-wf-2:1";
/// The workflows' queues: without a backlog, so that their steps hand off to each other all
/// through the chaos, not only once the other queues have drained.
const WF_QUEUES: [&str; 3] = ["chaos-wf-0", "chaos-wf-1", "chaos-wf-2"];
/// The pause between two workflows' dispatches: they start over the first five seconds.
const WF_GAP: Duration = Duration::from_millis(50);
/// The queue under flow control: a concurrency limit with shares, a queue rate and a named
/// limiter; its jobs have limit keys, costs and (always open) time windows.
const FLOW_QUEUE: &str = "chaos-flow";
const WORKERS: usize = 3;
/// Processors of the workers in slots 1 and 2; slot 0 runs [`WIDE_CONCURRENCY`].
const CONCURRENCY: usize = 10;
/// Slot 0's processors: the chaos jobs only nap, as IO-bound jobs wait.
const WIDE_CONCURRENCY: usize = 10_000;
/// IO-bound jobs for slot 0's 10,000 processors, on their own queue: each naps 2–8 s.
const WIDE_JOBS: u64 = 20_000;
const WIDE_QUEUE: &str = "chaos-wide";
const WORKER_KILLS: usize = 5;
const REDIS_PAUSE: Duration = Duration::from_secs(10);
/// Long enough that workers meet refused connections and back off, not just one failed call.
const REDIS_DOWN: Duration = Duration::from_secs(2);
const FULL_MEMORY: Duration = Duration::from_secs(3);
/// The proxied worker's lease (the default, 20 s), and time for recovery to put its jobs back
/// and for another worker to run them, before the partition heals.
const CUT_OFF: Duration = Duration::from_secs(26);
/// The slot of the worker that reaches Redis through the proxy.
const PROXIED: usize = 2;
const DRAIN_DEADLINE: Duration = Duration::from_secs(240);

// The worker binary runs these jobs; here they only give typed calls with the same wire
// names and argument types. Their bodies never run in this process.
#[job(queue = "chaos-default")]
async fn chaos_plain(_id: u64) {}

#[job(queue = "chaos-default")]
async fn chaos_flaky(_id: u64) {}

#[job(queue = "chaos-default")]
async fn chaos_step(_chain: u64, _step: u32, _id: u64) {}

#[job(queue = "chaos-wide")]
async fn chaos_wide(_id: u64) {}

#[job(queue = "chaos-default")]
async fn chaos_wf_step(_wf: u64, _step: u32, _id: u64) {}

#[job(queue = "chaos-wf-0")]
async fn chaos_ask(_id: u64) {}

#[job(queue = "chaos-default")]
async fn chaos_expiring(_id: u64, _deadline: u64) {}

#[job(queue = "chaos-default")]
async fn chaos_durable(_id: u64) {}

/// A durable job's iteration saves its cursor every this many items (as the worker binary's
/// `chaos_durable` does): a kill repeats at most this many.
const DURABLE_EVERY: u64 = 3;

/// Expiring jobs (ids from [`EXPIRING_FIRST`]), each due to start within 1 to 60 s of its
/// dispatch, ahead of the plain backlog: some start in time, the others miss their deadline,
/// through the kills and outages. Dropped once expired, so the dead set still holds only the poison.
const EXPIRING: u64 = 2_000;
const EXPIRING_FIRST: u64 = 10_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "chaos suite: run with cargo test -p gator-tests --test chaos -- --ignored --nocapture"]
async fn every_job_reaches_its_outcome_through_worker_kills_and_redis_outages() {
    let (mut rng, seed) = Rng::seeded();
    eprintln!("chaos: seed {seed} (CHAOS_SEED={seed} replays the events)");
    let mut redis = redis_server();
    let proxy = SilentProxy::start(redis.port());
    let mut fleet = Fleet::start(&redis.url(), &proxy.url());
    wait_until(
        "three registered workers",
        Duration::from_secs(20),
        || async { redis.cli(&["ZCARD", "gator:processes"]) == WORKERS.to_string() },
    )
    .await;

    let started = Instant::now();
    control_flow_queue(&client(&redis.url()).await).await;
    let workflows = tokio::spawn(dispatch_workflows(client(&redis.url()).await));
    let replies = tokio::spawn(send_replies(client(&redis.url()).await));
    let mut plan = enqueue(&client(&redis.url()).await, &mut rng).await;
    let poison = enqueue_poison(&redis).await;
    let mut chaos = unleash(&mut redis, &mut fleet, &proxy, &mut rng).await;
    plan.workflows = workflows.await.expect("the workflows' dispatcher");
    let retried_replies = replies.await.expect("the replier");
    eprintln!(
        "chaos: {} of {WORKFLOWS} workflows dispatched during the chaos (the others met an outage); \
         {WAITS} replies sent during it, {retried_replies} of them sent again after an outage",
        plan.workflows.iter().flatten().count()
    );
    let recoveries_ms: Vec<u128> = tokio::time::timeout(
        DRAIN_DEADLINE,
        std::mem::take(&mut chaos.recoveries).join_all(),
    )
    .await
    .expect("the killed workers' in-flight jobs are recovered")
    .iter()
    .map(Duration::as_millis)
    .collect();
    eprintln!(
        "chaos: events (jobs not yet run): {:?}; recovery after each respawn, ms: {recoveries_ms:?}",
        chaos.timeline
    );
    let leftovers = drain(&redis).await;
    let took = started.elapsed();
    let live = (
        fleet.pids(),
        redis.cli(&["ZRANGE", "gator:processes", "0", "-1"]),
    );
    let statuses = fleet.stop();
    let errors = fleet.log_lines("ERROR");

    let runs: HashMap<u64, u64> = query(&redis, redis::cmd("HGETALL").arg("chaos:runs")).await;
    let unpromised = undispatched_ids();
    let missing: Vec<u64> = (0..JOBS + WIDE_JOBS)
        .filter(|id| !runs.contains_key(id) && !unpromised.contains(id))
        .collect();
    assert!(
        leftovers.is_empty() && missing.is_empty(),
        "not drained {DRAIN_DEADLINE:?} after the chaos: {leftovers:#?}\n{} jobs never ran, first 20: {:?}\n\
         worker pids and registered processes at the deadline: {live:?}",
        missing.len(),
        &missing[..missing.len().min(20)]
    );
    assert_only_poison_died(&redis, &poison).await;
    let expired = assert_expiring_jobs_ran_in_time_or_expired(&redis, &plan.expiring).await;
    eprintln!("chaos: {expired} of {EXPIRING} expiring jobs expired unrun, the others ran in time");
    assert_no_units_left(&redis).await;
    assert_flaky_jobs_failed_first(&redis, &plan.flaky).await;
    let chain_duplicates = assert_chains_ran_in_order(&redis).await
        + assert_workflows_fanned_in(&redis, &plan.workflows).await;
    assert!(
        statuses.iter().all(|s| s.success()),
        "workers did not stop cleanly after the chaos: {statuses:?}"
    );
    let registered = redis.cli(&["ZRANGE", "gator:processes", "0", "-1"]);
    let stopped_but_registered: Vec<&u32> = live
        .0
        .iter()
        .filter(|pid| registered.contains(&format!(":{pid}:")))
        .collect();
    assert!(
        stopped_but_registered.is_empty(),
        "workers stopped cleanly must deregister (killed ones expire by themselves): {stopped_but_registered:?} in {registered}"
    );

    let by_attempt: HashMap<String, u64> =
        query(&redis, redis::cmd("HGETALL").arg("chaos:runs_by_attempt")).await;
    let mut by_pid: HashMap<String, u64> =
        query(&redis, redis::cmd("HGETALL").arg("chaos:runs_by_pid")).await;
    let durable_by_pid: HashMap<String, u64> =
        query(&redis, redis::cmd("HGETALL").arg("chaos:durable_by_pid")).await;
    by_pid.extend(durable_by_pid.clone());
    let causes = Causes::new(&chaos, &by_pid, &fleet);
    let durable = durable_repeats(
        &query(&redis, redis::cmd("HGETALL").arg("chaos:durable")).await,
        &durable_by_pid,
        &chaos.killed.values().copied().collect::<HashSet<u32>>(),
        |id, attempt| {
            chaos.cut_off_ids.contains(&id) || causes.ran_in_a_lapsed_process(id, Some(attempt))
        },
        DURABLE_EVERY,
    );
    let extra = causes.split(runs.iter().map(|(id, n)| (*id, None, *n)));
    let repeated = causes.split(by_attempt.iter().filter_map(|(key, n)| {
        let (id, attempt) = key.split_once(':')?;
        Some((id.parse().ok()?, Some(attempt.parse().ok()?), *n))
    }));
    let (last_event, backlog) = chaos.timeline.last().copied().expect("ten events");
    assert!(
        backlog > 0,
        "every job had run before the last event ({last_event:?}): the chaos hit an idle system"
    );
    report(
        &plan,
        &chaos,
        &recoveries_ms,
        seed,
        (&extra, chain_duplicates),
        (&repeated, &durable),
        took,
    );
    eprintln!(
        "chaos: {} error lines in the worker logs{}",
        errors.len(),
        errors
            .iter()
            .take(5)
            .map(|e| format!("\n  {e}"))
            .collect::<String>()
    );
    // Gator runs an attempt again only if the process running it died or was cut off from
    // Redis past its lease: an outcome written during a shorter outage is kept and written
    // once Redis answers.
    assert_eq!(
        repeated.other, 0,
        "attempts run twice outside killed workers and the one cut off past its lease \
         (runs by attempt and process: chaos:runs_by_attempt, chaos:runs_by_pid)"
    );
    // A durable job's step or item runs again in the same attempt only if its process died
    // (or was cut off past its lease) after it ran and before it was saved: at most once a
    // step, and one checkpoint interval of items, a kill or lapse.
    assert_eq!(
        (durable.steps.other, durable.items.other),
        (0, 0),
        "durable steps and items run twice in one attempt outside killed workers and the one \
         cut off past its lease: {durable:?} (chaos:durable, chaos:durable_by_pid)"
    );
    assert!(
        durable.over_bound.is_empty(),
        "durable jobs repeated more than a step and one checkpoint interval ({DURABLE_EVERY} \
         items) a kill or lapse: {:?}",
        durable.over_bound
    );
    assert_eq!(durable.jobs as usize, plan.durable, "every durable job ran");
    // A worker cut off past its lease drops its outcomes of jobs that ran again elsewhere, and
    // says so: it finished them while cut off, and wrote them once it reached Redis again.
    let dropped = fleet.log_lines("outcomes dropped");
    assert!(
        repeated.unreachable == 0 || !dropped.is_empty(),
        "{} attempts of workers cut off past their lease ran again elsewhere, and no log says \
         that their outcomes were dropped",
        repeated.unreachable
    );
    // An outcome is given up on only when trying again cannot help (a key of the wrong type);
    // the chaos makes none such. A Redis loading its data after a restart refuses a `MULTI`
    // whole (EXECABORT of LOADING), and that passes: before, such outcomes were dropped and
    // their jobs ran again after recovery.
    let given_up: Vec<&String> = errors
        .iter()
        .filter(|l| l.contains("trying again will not help"))
        .collect();
    assert!(
        given_up.is_empty(),
        "{} outcomes were given up on for a passing reason, first: {:?}",
        given_up.len(),
        given_up.first()
    );
    // A job runs twice only if it was in flight when its worker died, or when Redis went
    // away (a run recorded whose reply was lost, then retried).
    let unexplained: Vec<u64> = runs
        .iter()
        .filter(|(id, n)| {
            **n > 1
                && !chaos.in_flight_ids.contains(id)
                && !chaos.exposed_ids.contains(id)
                && !chaos.cut_off_ids.contains(id)
                && !causes.ran_in_a_lapsed_process(**id, None)
        })
        .map(|(id, _)| *id)
        .collect();
    assert!(
        unexplained.is_empty(),
        "{} jobs ran twice though no worker holding them died and Redis was reachable \
         throughout their run, first 20: {:?}",
        unexplained.len(),
        &unexplained[..unexplained.len().min(20)]
    );
    let exposed = chaos.in_flight_total
        + chaos.exposed_total
        + chaos.cut_off_ids.len() as u64
        + causes.lapsed_jobs;
    assert!(
        extra.total() <= exposed,
        "{} duplicate runs; the kills ({} jobs in flight), outages ({} in flight), the cut \
         ({} in flight) and the lapsed leases ({} jobs recovered) explain at most {exposed}",
        extra.total(),
        chaos.in_flight_total,
        chaos.exposed_total,
        chaos.cut_off_ids.len(),
        causes.lapsed_jobs,
    );
}

/// Redis with AOF and `appendfsync always`: Redis fsyncs before it replies, so its SIGKILL
/// loses no write a worker saw succeed. With `everysec` the last second of fetches and acks
/// could vanish, and a job could run twice or an acked chain step lose its successor for a
/// reason that is Redis's durability, not Gator's (docs/guarantees.md).
fn redis_server() -> RedisServer {
    RedisServer::start_with(ServerOptions {
        appendonly: true,
        fsync_always: true,
        ..ServerOptions::default()
    })
}

/// Puts [`FLOW_QUEUE`] under flow control: 6 units with shares of 50 % for `a` and 30 % for
/// the rest, 400 starts a second for the queue and 300 for its limiter `chaos-rate`.
async fn control_flow_queue(client: &Client) {
    use gator_core::flow::FlowSetting;
    let settings = [
        FlowSetting::Limit(Some(6)),
        FlowSetting::Share {
            key: Some("a".into()),
            percent: Some(50),
        },
        FlowSetting::Share {
            key: None,
            percent: Some(30),
        },
        FlowSetting::Rate {
            name: None,
            rate: Some("400/1s".parse().expect("a rate")),
        },
        FlowSetting::Rate {
            name: Some("chaos-rate".into()),
            rate: Some("300/1s".parse().expect("a rate")),
        },
    ];
    gator_core::Admin::new(client.clone())
        .set_queue_flow(FLOW_QUEUE, &settings)
        .await
        .expect("flow settings");
}

/// After the drain, no unit of the controlled queue is held: every killed worker's units were
/// released by the recovery that put its jobs back.
async fn assert_no_units_left(redis: &RedisServer) {
    let used: HashMap<String, i64> = query(
        redis,
        redis::cmd("HGETALL").arg(format!("gator:{{{FLOW_QUEUE}}}:used")),
    )
    .await;
    let held: Vec<String> = query(
        redis,
        redis::cmd("KEYS").arg(format!("gator:{{{FLOW_QUEUE}}}:units:*")),
    )
    .await;
    assert!(
        used.is_empty() && held.is_empty(),
        "units leaked on {FLOW_QUEUE}: in use {used:?}, held by {held:?}"
    );
}

/// What was enqueued, for the checks and the report.
struct Plan {
    plain: usize,
    /// Jobs on the controlled queue.
    controlled: usize,
    flaky: Vec<u64>,
    scheduled: usize,
    /// Durable jobs (steps, an iteration, a sleep).
    durable: usize,
    /// The workflows' ids, by workflow number (`None` where the dispatch failed).
    workflows: Vec<Option<String>>,
    /// The expiring jobs: id, jid, deadline (ms, Redis time).
    expiring: Vec<(u64, String, u64)>,
}

/// Enqueues [`JOBS`] jobs with ids `0..JOBS`: the chains' steps first (id = chain × 3 + step
/// − 1), then the workflows' steps, then plain, flaky (about 10%) and scheduled (about 10%)
/// jobs on random queues.
async fn enqueue(client: &Client, rng: &mut Rng) -> Plan {
    let mut pending = JoinSet::new();
    for c in 0..CHAINS {
        let step = |s: u64| {
            let queue = QUEUES[((c + s) % 3) as usize];
            ChaosStep::call(c, s as u32, c * STEPS + s - 1).queue(queue)
        };
        let chain = Chain::new().then(step(1)).then(step(2)).then(step(3));
        let client = client.clone();
        pending.spawn(async move { chain.through(&client).dispatch().await });
    }
    let (mut plain, mut flaky, mut flaky_ids, mut scheduled) = (vec![], vec![], vec![], 0);
    let (mut controlled, mut durable) = (vec![], vec![]);
    let first_wait = CHAINS * STEPS + WORKFLOWS * WF_STEPS;
    client
        .dispatch_many((first_wait..first_wait + WAITS).map(ChaosAsk::call))
        .await
        .expect("enqueue the jobs that wait for replies");
    for id in first_wait + WAITS..JOBS {
        let queue = QUEUES[rng.below(3) as usize];
        match rng.below(10) {
            2 => {
                let mut job = ChaosPlain::call(id)
                    .queue(FLOW_QUEUE)
                    .limit_key(["a", "b", "c"][(id % 3) as usize]);
                if id % 4 == 0 {
                    job = job.cost(2);
                }
                if id % 5 == 0 {
                    job = job.rate_limiter("chaos-rate");
                }
                if id % 7 == 0 {
                    job = job.windows(["00:00-24:00"], Some("Europe/Berlin"));
                }
                // Half take turns by fair key among ten tenants, beside the limit, shares,
                // rate and windows: parked at their key's turn, put back first by recovery.
                if id % 2 == 0 {
                    job = job.fair_key(format!("tenant-{}", id % 10));
                }
                controlled.push(job);
            }
            // About 2.5 %: a step, ten items saved every three, a short sleep, a step.
            3 if id % 4 == 0 => durable.push(ChaosDurable::call(id).queue(queue)),
            0 => {
                flaky.push(ChaosFlaky::call(id).queue(queue));
                flaky_ids.push(id);
            }
            1 => {
                let due = SystemTime::now() + rng.millis(2000, 5000);
                let client = client.clone();
                let job = ChaosPlain::call(id).queue(queue);
                pending.spawn(async move { job.at(due).through(&client).dispatch().await });
                scheduled += 1;
            }
            _ => plain.push(ChaosPlain::call(id).queue(queue)),
        }
    }
    let plain_count = plain.len();
    let controlled_count = controlled.len();
    let durable_count = durable.len();
    client
        .dispatch_many(durable)
        .await
        .expect("enqueue durable jobs");
    // Ahead of the plain backlog: some run in time, the others expire waiting.
    let expiring = enqueue_expiring(client, rng).await;
    client
        .dispatch_many(controlled)
        .await
        .expect("enqueue the controlled queue's jobs");
    client
        .dispatch_many(plain)
        .await
        .expect("enqueue plain jobs");
    for batch in (JOBS..JOBS + WIDE_JOBS).collect::<Vec<_>>().chunks(1000) {
        client
            .dispatch_many(batch.iter().map(|id| ChaosWide::call(*id)))
            .await
            .expect("enqueue the wide worker's jobs");
    }
    client
        .dispatch_many(flaky)
        .await
        .expect("enqueue flaky jobs");
    while let Some(done) = pending.join_next().await {
        done.expect("a dispatch task")
            .expect("a chain or scheduled dispatch");
    }
    Plan {
        plain: plain_count,
        controlled: controlled_count,
        flaky: flaky_ids,
        scheduled,
        durable: durable_count,
        workflows: Vec::new(),
        expiring,
    }
}

/// Dispatches [`EXPIRING`] expiring jobs on random queues, each with a deadline 1 to 60 s
/// after Redis's clock now, dropped once expired; their ids, jids and deadlines.
async fn enqueue_expiring(client: &Client, rng: &mut Rng) -> Vec<(u64, String, u64)> {
    use gator_core::expiry::OnExpire;
    let now = client.redis_time().await.expect("Redis's clock");
    let planned: Vec<(u64, u64, &str)> = (EXPIRING_FIRST..EXPIRING_FIRST + EXPIRING)
        .map(|id| {
            let ttl = rng.millis(1_000, 60_000).as_millis() as u64;
            (id, now + ttl, QUEUES[rng.below(3) as usize])
        })
        .collect();
    let jobs = planned.iter().map(|(id, deadline, queue)| {
        let at = std::time::UNIX_EPOCH + Duration::from_millis(*deadline);
        ChaosExpiring::call(*id, *deadline)
            .queue(*queue)
            .expires_at(at)
            .on_expire(OnExpire::Drop)
    });
    let jids = client
        .dispatch_many(jobs)
        .await
        .expect("enqueue the expiring jobs");
    planned
        .into_iter()
        .zip(jids)
        .map(|((id, deadline, _), jid)| (id, jid, deadline))
        .collect()
}

/// No expiring job started at or after its deadline, with no slack: each records the Redis
/// time at which the settling script judged it in time (`Context::started_at`), the very
/// instant compared with its deadline in the script that recorded it running, so a Redis pause
/// or a frozen worker cannot put the two apart (as the job's own later `TIME` read could, which
/// needed 15 s of slack). The script starts a job only if `now < deadline` (ms): a start at
/// `deadline - 1` passes, one at `deadline` is late. Not covered, by design: the local
/// microseconds between the script's reply and the body's first line, on no Redis clock. And each
/// either ran or is recorded `expired`: none is lost. Returns how many expired.
async fn assert_expiring_jobs_ran_in_time_or_expired(
    redis: &RedisServer,
    expiring: &[(u64, String, u64)],
) -> usize {
    let starts: HashMap<String, u64> =
        query(redis, redis::cmd("HGETALL").arg("chaos:expiring")).await;
    let mut started: HashMap<u64, u64> = HashMap::new();
    for (key, at) in &starts {
        let id: u64 = key
            .split(':')
            .next()
            .and_then(|id| id.parse().ok())
            .expect("an id");
        let latest = started.entry(id).or_default();
        *latest = (*latest).max(*at);
    }
    let client = client(&redis.url()).await;
    let (mut expired, mut late, mut lost, mut early) = (0, Vec::new(), Vec::new(), Vec::new());
    for (id, jid, deadline) in expiring {
        if let Some(at) = started.get(id)
            && *at >= *deadline
        {
            late.push((*id, at - deadline));
        }
        let status = client.status(jid).await.expect("a status");
        if let JobStatus::Expired { at, .. } = status {
            // Its record holds the Redis time it was judged expired at: never before its deadline.
            let at = at
                .duration_since(UNIX_EPOCH)
                .expect("after 1970")
                .as_millis() as u64;
            if at < *deadline {
                early.push((*id, deadline - at));
            }
        }
        if status.name() == "expired" {
            expired += 1;
        } else if !started.contains_key(id) {
            lost.push((*id, status.name()));
        }
    }
    assert!(
        late.is_empty(),
        "{} expiring jobs started after their deadline (id, ms late), first 20: {:?}",
        late.len(),
        &late[..late.len().min(20)]
    );
    assert!(
        early.is_empty(),
        "{} expiring jobs were judged expired before their deadline (id, ms early), first 20: {:?}",
        early.len(),
        &early[..early.len().min(20)]
    );
    assert!(
        lost.is_empty(),
        "{} expiring jobs neither ran nor expired, first 20: {:?}",
        lost.len(),
        &lost[..lost.len().min(20)]
    );
    expired
}

/// Dispatches [`WORKFLOWS`] fan-out workflows, [`WF_GAP`] apart, ids after the chains': step
/// `s` (1 to 5) of workflow `w` on the queue `(w + s) % 3` of [`WF_QUEUES`], so every hand-off
/// crosses queues. A dispatch that meets an outage is tried again.
async fn dispatch_workflows(client: Client) -> Vec<Option<String>> {
    let mut ids = Vec::new();
    for w in 0..WORKFLOWS {
        tokio::time::sleep(WF_GAP).await;
        let step = |s: u64| {
            let queue = WF_QUEUES[((w + s) % 3) as usize];
            let id = CHAINS * STEPS + w * WF_STEPS + s - 1;
            ChaosWfStep::call(w, s as u32, id).queue(queue)
        };
        let workflow = Workflow::new()
            .then(step(1))
            .then_all([step(2), step(3), step(4)])
            .then(step(5));
        match workflow.through(&client).dispatch().await {
            Ok(id) => ids.push(Some(id)),
            // Redis frozen, restarting or full: a dispatch that fails promises nothing (it may
            // also have been stored, its reply lost), so its steps need not run; when they do,
            // they are checked all the same.
            Err(e) => {
                eprintln!("chaos: the dispatch of workflow {w} failed: {e}");
                UNDISPATCHED.lock().unwrap().push(w);
                ids.push(None);
            }
        }
    }
    ids
}

/// Replies to the [`WAITS`] waiting jobs, 20 ms apart from the start of the chaos (some before
/// their job waits, most after), each sent again until Redis takes it: a reply whose answer
/// was lost in an outage comes back `Duplicate` or `Kept` the second time, and either is fine.
/// Returns how many had to be sent again.
async fn send_replies(client: Client) -> u64 {
    let first = CHAINS * STEPS + WORKFLOWS * WF_STEPS;
    let mut again = 0;
    for id in first..first + WAITS {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let key = format!("chaos:reply:{id}");
        while client.reply(&key, &id).await.is_err() {
            again += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    again
}

/// The workflows whose dispatch failed during an outage.
static UNDISPATCHED: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

/// The job ids of the workflows whose dispatch failed.
fn undispatched_ids() -> HashSet<u64> {
    let failed = UNDISPATCHED.lock().unwrap();
    failed
        .iter()
        .flat_map(|w| (0..WF_STEPS).map(move |s| CHAINS * STEPS + w * WF_STEPS + s))
        .collect()
}

#[derive(Debug, Clone, Copy)]
enum Event {
    KillWorker,
    PauseRedis,
    KillRedis,
    /// The proxied worker's connections stop forwarding, without closing.
    SilenceConnections,
    /// Redis at its memory limit (`noeviction`) for [`FULL_MEMORY`].
    FillMemory,
    /// The proxied worker cut off from Redis, every connection open or new, for [`CUT_OFF`]:
    /// past its lease, so recovery puts its jobs back and they run again elsewhere.
    CutOff,
}

/// What the chaos did, for the checks and the report.
#[derive(Default)]
struct ChaosLog {
    /// Ids in a killed worker's in-flight lists when it died: the only jobs a kill can run twice.
    in_flight_ids: HashSet<u64>,
    /// The same, counted once per kill (a job can be in flight in two killed workers in turn).
    in_flight_total: u64,
    /// From each respawn until the killed process's in-flight jobs were back in their queues.
    recoveries: JoinSet<Duration>,
    /// Each event, and how many jobs had not run yet when it struck.
    timeline: Vec<(Event, u64)>,
    /// Ids in any in-flight list when Redis went away or a connection went silent: a run of
    /// theirs may have been recorded and its reply lost, so they may run twice.
    exposed_ids: HashSet<u64>,
    /// The same, counted once per event.
    exposed_total: u64,
    /// Each killed process's id, with its pid.
    killed: HashMap<String, u32>,
    /// Ids in the proxied worker's in-flight lists when it was cut off past its lease.
    cut_off_ids: HashSet<u64>,
    /// When the cut heals (the proxied worker is not killed from the cut on, so that its
    /// outcomes reach Redis once it heals and the log says they were dropped).
    heal_at: Option<Instant>,
}

/// Runs the ten events in a random order, a random 0.3–1.5 s apart.
async fn unleash(
    redis: &mut RedisServer,
    fleet: &mut Fleet,
    proxy: &SilentProxy,
    rng: &mut Rng,
) -> ChaosLog {
    let mut events = vec![Event::KillWorker; WORKER_KILLS];
    events.extend([
        Event::PauseRedis,
        Event::KillRedis,
        Event::SilenceConnections,
        Event::FillMemory,
        Event::CutOff,
    ]);
    for i in (1..events.len()).rev() {
        events.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut log = ChaosLog::default();
    for event in events {
        tokio::time::sleep(rng.millis(300, 1500)).await;
        let ran: u64 = query(redis, redis::cmd("HLEN").arg("chaos:runs")).await;
        log.timeline
            .push((event, (JOBS + WIDE_JOBS).saturating_sub(ran)));
        let outage = !matches!(event, Event::KillWorker | Event::CutOff);
        if outage {
            // Read what is in flight with the workers frozen, so nothing can be fetched between
            // the reading and the outage: these are the jobs the outage can catch mid-run.
            fleet.freeze_all();
            tokio::time::sleep(Duration::from_millis(50)).await;
            let exposed = in_flight_of(redis, "*").await;
            log.exposed_total += exposed.len() as u64;
            log.exposed_ids.extend(exposed);
        }
        match event {
            Event::KillWorker => {
                // From the cut on, the proxied worker is spared (see `ChaosLog::heal_at`).
                let slots = if log.heal_at.is_some() {
                    PROXIED
                } else {
                    WORKERS
                };
                let slot = rng.below(slots as u64) as usize;
                kill_worker(redis, fleet, slot, &mut log).await;
            }
            Event::CutOff => cut_off(redis, fleet, proxy, &mut log).await,
            Event::PauseRedis => {
                redis.pause();
                fleet.thaw_all();
                tokio::time::sleep(REDIS_PAUSE).await;
                redis.resume();
            }
            Event::KillRedis => {
                redis.kill();
                fleet.thaw_all();
                tokio::time::sleep(REDIS_DOWN).await;
                tokio::task::block_in_place(|| redis.restart());
            }
            Event::SilenceConnections => {
                proxy.silence();
                fleet.thaw_all();
            }
            Event::FillMemory => {
                redis.cli(&["CONFIG", "SET", "maxmemory", "1"]);
                fleet.thaw_all();
                tokio::time::sleep(FULL_MEMORY).await;
                redis.cli(&["CONFIG", "SET", "maxmemory", "0"]);
            }
        }
    }
    if let Some(heal_at) = log.heal_at {
        tokio::time::sleep_until(heal_at.into()).await;
        proxy.heal();
    }
    log
}

/// Cuts the proxied worker off from Redis for [`CUT_OFF`] (healed at the end of
/// [`unleash`]), noting the jobs it holds: frozen first, so its in-flight lists are read as
/// they are when the partition starts.
async fn cut_off(redis: &RedisServer, fleet: &mut Fleet, proxy: &SilentProxy, log: &mut ChaosLog) {
    let pid = fleet.freeze(PROXIED);
    tokio::time::sleep(Duration::from_millis(50)).await;
    if let Some(process) = process_id(redis, PROXIED, pid) {
        log.cut_off_ids = in_flight_of(redis, &process).await.into_iter().collect();
    }
    proxy.cut();
    log.heal_at = Some(Instant::now() + CUT_OFF);
    fleet.thaw_all();
}

/// SIGKILLs the worker in `slot`, notes the jobs it died holding, respawns it, and waits until
/// those jobs are recovered: at once by slot 0's successor (the same `--worker-id`), once the
/// lease expires for the others.
async fn kill_worker(redis: &RedisServer, fleet: &mut Fleet, slot: usize, log: &mut ChaosLog) {
    // Frozen first, so its in-flight lists can be read exactly as they are when it dies: a
    // stopped process sends nothing, and 50 ms lets Redis apply what it had already sent.
    let pid = fleet.freeze(slot);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let Some(process) = process_id(redis, slot, pid) else {
        // Killed before it started serving: it held nothing, so nothing is to be recovered.
        fleet.kill(slot);
        fleet.respawn(slot);
        return;
    };
    let orphans = in_flight_of(redis, &process).await;
    log.killed.insert(process.clone(), pid);
    fleet.kill(slot);
    log.in_flight_total += orphans.len() as u64;
    log.in_flight_ids.extend(orphans);
    fleet.respawn(slot);
    // Timed in the background, so the next event strikes while work is left.
    let url = redis.url();
    log.recoveries.spawn(async move {
        let respawned = Instant::now();
        let redis = redis::Client::open(url).expect("the chaos redis URL");
        // The process's in-flight lists, one per queue it may have served: named, not found
        // with KEYS, which scans the whole keyspace (every job's status record) and, polled
        // this often, would keep Redis busy for the workers.
        let lists: Vec<String> = all_queues()
            .map(|queue| format!("gator:{{{queue}}}:inflight:{process}"))
            .collect();
        loop {
            let mut conn = match redis.get_multiplexed_async_connection().await {
                Ok(conn) => conn,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue; // Redis may be down: it comes back
                }
            };
            let left: Result<u64, _> = redis::cmd("EXISTS")
                .arg(&lists)
                .query_async(&mut conn)
                .await;
            if left.is_ok_and(|left| left == 0) {
                return respawned.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

/// The registered id of the worker process in `slot` with `pid`: `chaos-0:<nonce>` for slot
/// 0 (its `--worker-id`), `<host>:<pid>:<nonce>` for the others. `None` for a process that is
/// neither registered nor in a lease set: one respawned so recently (on a loaded machine, a
/// second or more) that it has not yet registered nor fetched, and so holds no job, as a fetch
/// joins the queue's lease set in the same script.
fn process_id(redis: &RedisServer, slot: usize, pid: u32) -> Option<String> {
    let registered = redis.cli(&["ZRANGE", "gator:processes", "0", "-1", "WITHSCORES"]);
    let entries: Vec<(&str, f64)> = registered
        .lines()
        .collect::<Vec<_>>()
        .chunks(2)
        .filter_map(|pair| Some((pair[0], pair.get(1)?.trim().parse().ok()?)))
        .collect();
    let found = if slot == 0 {
        // Every run of slot 0 is `chaos-0:<nonce>`, and a killed one stays registered until
        // its registration expires. The live one is the one whose description has this pid;
        // failing that (a description is a plain SET, refused while Redis is full, and then
        // expires), the one that beat last, as each run starts after its predecessor died.
        let runs: Vec<&(&str, f64)> = entries
            .iter()
            .filter(|(id, _)| id.starts_with("chaos-0:"))
            .collect();
        runs.iter()
            .find(|(id, _)| {
                let info = redis.cli(&["GET", &format!("gator:process:{id}")]);
                serde_json::from_str::<Value>(info.trim())
                    .is_ok_and(|info| info["pid"].as_u64() == Some(u64::from(pid)))
            })
            .or_else(|| runs.iter().max_by(|a, b| a.1.total_cmp(&b.1)))
            .map(|(id, _)| *id)
    } else {
        entries
            .iter()
            .map(|(id, _)| *id)
            .find(|id| id.contains(&format!(":{pid}:")))
    };
    if let Some(id) = found {
        return Some(id.to_owned());
    }
    // Not registered right now: after Redis was paused or its connections silenced, its
    // registration expired and was pruned, and this frozen process has not beaten again. Its
    // id is still in the lease sets of the queues it fetched from (kept 10 minutes).
    all_queues()
        .flat_map(|queue| {
            let ids = redis.cli(&["ZRANGE", &format!("gator:{{{queue}}}:leases"), "0", "-1"]);
            ids.lines().map(str::to_owned).collect::<Vec<_>>()
        })
        .find(|id| id.contains(&format!(":{pid}:")))
}

/// The ids of the chaos jobs in the in-flight lists of `process` (`*`: of every process).
async fn in_flight_of(redis: &RedisServer, process: &str) -> Vec<u64> {
    let keys = inflight_lists(redis, process).await;
    let mut ids = Vec::new();
    for key in keys {
        let jobs: Vec<Vec<u8>> = query(redis, redis::cmd("LRANGE").arg(key).arg(0).arg(-1)).await;
        ids.extend(jobs.iter().filter_map(|job| job_id(job)));
    }
    ids
}

/// The test's id of a chaos job from its payload: the last argument of a chain step, else the
/// only one. `None` for the poison payloads.
fn job_id(payload: &[u8]) -> Option<u64> {
    let payload: Value = serde_json::from_slice(payload).ok()?;
    if !payload["job"].as_str()?.starts_with("chaos_") {
        return None;
    }
    payload["args"].as_array()?.last()?.as_u64()
}

/// The two poison payloads: bytes that are not UTF-8, and arguments whose decoder panics.
struct Poison {
    bytes: Vec<u8>,
    panicking_jid: &'static str,
}

/// Pushes the two poison payloads among the chaos jobs.
async fn enqueue_poison(redis: &RedisServer) -> Poison {
    let poison = Poison {
        bytes: b"\xff\xfe not a payload \xc0".to_vec(),
        panicking_jid: "chaos-poison-unlucky",
    };
    let unlucky = format!(
        r#"{{"jid":"{}","job":"poison_unlucky","args":[13],"queue":"chaos-default","created_at":1,"enqueued_at":1}}"#,
        poison.panicking_jid
    );
    let mut conn = redis.client().await;
    redis::cmd("RPUSH")
        .arg("gator:{chaos-default}:queue")
        .arg(&poison.bytes)
        .arg(unlucky.as_bytes())
        .query_async::<()>(&mut conn)
        .await
        .expect("push the poison payloads");
    poison
}

/// Waits until nothing is left to run, or [`DRAIN_DEADLINE`] passes; returns what was left.
async fn drain(redis: &RedisServer) -> Vec<String> {
    let deadline = Instant::now() + DRAIN_DEADLINE;
    loop {
        let left = leftovers(redis).await;
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every queue the chaos uses.
fn all_queues() -> impl Iterator<Item = &'static str> {
    QUEUES
        .into_iter()
        .chain([WIDE_QUEUE, FLOW_QUEUE])
        .chain(WF_QUEUES)
}

/// The in-flight lists of `process` (`*`: of every process) on every chaos queue, found
/// through the queues' lease sets (a list exists only while its process has an entry there),
/// never with KEYS: that scans the whole keyspace, every job's status record included, and
/// polled often it keeps Redis too busy for the workers.
async fn inflight_lists(redis: &RedisServer, process: &str) -> Vec<String> {
    let mut lists = Vec::new();
    for queue in all_queues() {
        let ids: Vec<String> = query(
            redis,
            redis::cmd("ZRANGE")
                .arg(format!("gator:{{{queue}}}:leases"))
                .arg(0)
                .arg(-1),
        )
        .await;
        for id in ids.into_iter().filter(|id| process == "*" || id == process) {
            let key = format!("gator:{{{queue}}}:inflight:{id}");
            let exists: u64 = query(redis, redis::cmd("EXISTS").arg(&key)).await;
            if exists == 1 {
                lists.push(key);
            }
        }
    }
    lists
}

/// Every key still holding work, with its size, and how many jobs have not run yet.
async fn leftovers(redis: &RedisServer) -> Vec<String> {
    let mut keys = Vec::new();
    for queue in all_queues() {
        // (The controlled queue's list key is its `controlled` marker: its jobs are parked.)
        if queue != FLOW_QUEUE {
            keys.push((format!("gator:{{{queue}}}:queue"), "LLEN"));
        }
        keys.push((format!("gator:{{{queue}}}:scheduled"), "ZCARD"));
        keys.push((format!("gator:{{{queue}}}:retry"), "ZCARD"));
    }
    keys.extend(
        inflight_lists(redis, "*")
            .await
            .into_iter()
            .map(|key| (key, "LLEN")),
    );
    keys.push((format!("gator:{{{FLOW_QUEUE}}}:critical"), "ZCARD"));
    keys.push((format!("gator:{{{FLOW_QUEUE}}}:backlog"), "LLEN"));
    let mut left = Vec::new();
    for (key, len) in keys {
        let n: u64 = query(redis, redis::cmd(len).arg(&key)).await;
        if n > 0 {
            left.push(format!("{key}: {n}"));
        }
    }
    let ran: u64 = query(redis, redis::cmd("HLEN").arg("chaos:runs")).await;
    let expected = JOBS + WIDE_JOBS - undispatched_ids().len() as u64;
    if ran < expected {
        left.push(format!("{} jobs not run yet", expected - ran));
    }
    if left.is_empty() {
        // The last look, once everything else is done: the controlled queue's parked jobs
        // and the chains' waiting steps have no index, so KEYS finds them, but only here (it
        // scans the whole keyspace, every job's status record included).
        for (pattern, len) in [
            (format!("gator:{{{FLOW_QUEUE}}}:held:*"), "ZCARD"),
            ("gator:*:chain:*".to_owned(), "LLEN"),
            ("gator:*:wfpush:*".to_owned(), "HLEN"),
        ] {
            let found: Vec<String> = query(redis, redis::cmd("KEYS").arg(pattern)).await;
            for key in found {
                let n: u64 = query(redis, redis::cmd(len).arg(&key)).await;
                if n > 0 {
                    left.push(format!("{key}: {n}"));
                }
            }
        }
    }
    left
}

/// No chaos job died; the two poison payloads did, each kept whole with its reason.
async fn assert_only_poison_died(redis: &RedisServer, poison: &Poison) {
    for queue in all_queues() {
        let dead = redis.zset_json(&format!("gator:{{{queue}}}:dead")).await;
        let errors: Vec<&Value> = dead.iter().map(|entry| &entry["error"]).take(10).collect();
        let expected = if queue == "chaos-default" { 2 } else { 0 };
        assert_eq!(
            dead.len(),
            expected,
            "{} jobs died on {queue}; errors of the first 10: {errors:?}",
            dead.len()
        );
    }
    let dead = redis.zset_json("gator:{chaos-default}:dead").await;
    let bytes = dead
        .iter()
        .find_map(|entry| entry["raw_base64"].as_str())
        .expect("the bytes that are not UTF-8 are in the dead set");
    let kept = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, bytes).unwrap();
    assert_eq!(kept, poison.bytes, "kept exactly");
    let unlucky = dead
        .iter()
        .find(|entry| entry["jid"] == poison.panicking_jid)
        .expect("the payload whose decoder panics is in the dead set");
    assert!(
        unlucky["error"].as_str().unwrap().contains("13 is unlucky"),
        "{unlucky}"
    );
}

/// Every flaky job failed its first attempt on purpose, so it ran at least twice.
async fn assert_flaky_jobs_failed_first(redis: &RedisServer, flaky: &[u64]) {
    let attempts: HashMap<u64, u64> =
        query(redis, redis::cmd("HGETALL").arg("chaos:attempts")).await;
    let short: Vec<u64> = flaky
        .iter()
        .copied()
        .filter(|id| attempts.get(id).copied().unwrap_or(0) < 2)
        .collect();
    assert!(
        short.is_empty(),
        "{} flaky jobs were attempted fewer than twice, first 20: {:?}",
        short.len(),
        &short[..short.len().min(20)]
    );
}

/// Checks every chain's list of step runs; returns how many step runs were duplicates.
async fn assert_chains_ran_in_order(redis: &RedisServer) -> u64 {
    let mut pipe = redis::pipe();
    for c in 0..CHAINS {
        pipe.lrange(format!("chaos:chain:{c}"), 0, -1);
    }
    let lists: Vec<Vec<u32>> = pipe
        .query_async(&mut redis.client().await)
        .await
        .expect("read the chains' lists");
    let mut duplicates = 0;
    for (c, steps) in lists.iter().enumerate() {
        match chain_order(steps, STEPS as u32) {
            Ok(extra) => duplicates += extra,
            Err(e) => panic!("chain {c} ran out of order: {e}"),
        }
    }
    duplicates
}

/// Checks every workflow's list of step runs (the fan-in after all its parents) and its status
/// (done); returns how many step runs were duplicates.
async fn assert_workflows_fanned_in(redis: &RedisServer, ids: &[Option<String>]) -> u64 {
    let mut pipe = redis::pipe();
    for w in 0..WORKFLOWS {
        pipe.lrange(format!("chaos:wf:{w}"), 0, -1);
    }
    let lists: Vec<Vec<u32>> = pipe
        .query_async(&mut redis.client().await)
        .await
        .expect("read the workflows' lists");
    let mut duplicates = 0;
    for (w, steps) in lists.iter().enumerate() {
        if ids[w].is_none() && steps.is_empty() {
            continue; // its dispatch failed, and was not stored
        }
        match fan_in_order(steps, 3) {
            Ok(extra) => duplicates += extra,
            Err(e) => panic!("workflow {w} ran out of order: {e}"),
        }
    }
    let short: Vec<u64> = query(redis, redis::cmd("SMEMBERS").arg("chaos:wf:short")).await;
    assert!(
        short.is_empty(),
        "fan-ins that ran without their three parents' results: {short:?}"
    );
    let client = client(&redis.url()).await;
    for id in ids.iter().flatten() {
        let status = client.workflow_status(id).await.unwrap();
        let state = status.as_ref().map(|s| s.state);
        assert_eq!(
            state,
            Some(WorkflowState::Done),
            "workflow {id}: {status:?}"
        );
    }
    duplicates
}

/// Extra runs (or attempts), by cause.
#[derive(Debug, Default)]
struct Extra {
    /// Of jobs in flight in a killed worker.
    killed: u64,
    /// Of jobs run by a worker whose lease ran out while it lived: it was cut off from Redis
    /// (or Redis from the fleet) past its lease, and recovery put its jobs back.
    unreachable: u64,
    /// Of every other job.
    other: u64,
}

impl Extra {
    fn total(&self) -> u64 {
        self.killed + self.unreachable + self.other
    }
}

/// What the chaos did to which jobs and processes, to tell why a job ran twice.
struct Causes<'a> {
    /// Ids in a killed worker's in-flight lists when it died.
    killed: &'a HashSet<u64>,
    /// The pids of processes whose lease ran out while they lived: another worker's recovery
    /// put back their in-flight jobs (the log says which process), and they were not killed.
    lapsed: HashSet<u32>,
    /// How many jobs those recoveries put back.
    lapsed_jobs: u64,
    /// Which processes ran each job's attempts (id → attempt → pids), from `chaos:runs_by_pid`.
    ran_by: HashMap<u64, HashMap<u32, HashSet<u32>>>,
}

impl<'a> Causes<'a> {
    fn new(chaos: &'a ChaosLog, by_pid: &HashMap<String, u64>, fleet: &Fleet) -> Causes<'a> {
        let mut ran_by: HashMap<u64, HashMap<u32, HashSet<u32>>> = HashMap::new();
        for key in by_pid.keys() {
            let mut parts = key.split(':').map(str::parse::<u64>);
            if let (Some(Ok(id)), Some(Ok(attempt)), Some(Ok(pid))) =
                (parts.next(), parts.next(), parts.next())
            {
                ran_by
                    .entry(id)
                    .or_default()
                    .entry(attempt as u32)
                    .or_default()
                    .insert(pid as u32);
            }
        }
        let (mut lapsed, mut lapsed_jobs) = (HashSet::new(), 0);
        for line in fleet.log_lines("recovered the in-flight jobs of a dead worker process") {
            let field = |name: &str| {
                let at = line.find(&format!(" {name}="))? + name.len() + 2;
                line[at..].split_whitespace().next().map(str::to_owned)
            };
            let Some(process) = field("process") else {
                continue;
            };
            if chaos.killed.contains_key(&process) {
                continue;
            }
            // `<host>:<pid>:…`; slot 0's `chaos-0:<nonce>` names no pid, and only its own
            // successors, after a kill, recover it.
            if let Some(pid) = process.split(':').nth(1).and_then(|p| p.parse().ok()) {
                lapsed.insert(pid);
                lapsed_jobs += field("jobs").and_then(|n| n.parse().ok()).unwrap_or(0);
            }
        }
        Causes {
            killed: &chaos.in_flight_ids,
            lapsed,
            lapsed_jobs,
            ran_by,
        }
    }

    /// Whether `id` (at `attempt`, or any attempt) ran in a process whose lease ran out.
    fn ran_in_a_lapsed_process(&self, id: u64, attempt: Option<u32>) -> bool {
        self.ran_by.get(&id).is_some_and(|attempts| {
            attempts
                .iter()
                .filter(|(a, _)| attempt.is_none_or(|attempt| **a == attempt))
                .any(|(_, pids)| pids.iter().any(|pid| self.lapsed.contains(pid)))
        })
    }

    /// Extra runs of `(id, attempt, runs)` (attempt `None`: all of the job's runs), by cause.
    fn split(&self, runs: impl Iterator<Item = (u64, Option<u32>, u64)>) -> Extra {
        let mut split = Extra::default();
        for (id, attempt, n) in runs.filter(|(_, _, n)| *n > 1) {
            let extra = n - 1;
            if self.killed.contains(&id) {
                split.killed += extra;
            } else if self.ran_in_a_lapsed_process(id, attempt) {
                split.unreachable += extra;
            } else {
                split.other += extra;
            }
        }
        split
    }
}

fn report(
    plan: &Plan,
    chaos: &ChaosLog,
    recoveries_ms: &[u128],
    seed: u64,
    (extra, chain_duplicates): (&Extra, u64),
    (repeated, durable): (&Extra, &DurableRepeats),
    took: Duration,
) {
    eprintln!(
        "chaos: {JOBS} jobs ({} plain, {} under flow control, {} flaky, {} scheduled, {CHAINS} chains of {STEPS}) and \
         {WIDE_JOBS} IO-bound ones at concurrency {WIDE_CONCURRENCY}, \
         {WORKER_KILLS} worker kills ({} jobs in flight), redis paused {}s, restarted, full for \
         a while, a worker's connections silenced ({} jobs in flight at the outages), a worker \
         cut off for {}s ({} jobs in flight); duplicate runs: {} ({extra:?}, {chain_duplicates} \
         of them chain steps); attempts run twice: {repeated:?}; {} durable jobs, repeated in one \
         attempt: steps {:?}, items {:?}; took {:.1} s",
        plan.plain,
        plan.controlled,
        plan.flaky.len(),
        plan.scheduled,
        chaos.in_flight_total,
        REDIS_PAUSE.as_secs(),
        chaos.exposed_total,
        CUT_OFF.as_secs(),
        chaos.cut_off_ids.len(),
        extra.total(),
        durable.jobs,
        durable.steps,
        durable.items,
        took.as_secs_f64()
    );
    let result = serde_json::json!({
        "seed": seed,
        "jobs": JOBS,
        "worker_kills": WORKER_KILLS,
        "in_flight_at_kills": chaos.in_flight_total,
        "in_flight_at_outages": chaos.exposed_total,
        "in_flight_at_cut_off": chaos.cut_off_ids.len(),
        "max_recovery_ms": recoveries_ms.iter().max(),
        "duplicates": extra.total(),
        "duplicates_in_killed_workers": extra.killed,
        "duplicates_in_workers_cut_off_past_their_lease": extra.unreachable,
        "duplicates_elsewhere": extra.other,
        "attempts_run_twice_in_killed_workers": repeated.killed,
        "attempts_run_twice_in_workers_cut_off_past_their_lease": repeated.unreachable,
        "attempts_run_twice_elsewhere": repeated.other,
        "durable_jobs": durable.jobs,
        "durable_steps_repeated_in_killed_workers": durable.steps.killed,
        "durable_steps_repeated_in_workers_cut_off_past_their_lease": durable.steps.outage,
        "durable_steps_repeated_elsewhere": durable.steps.other,
        "durable_items_repeated_in_killed_workers": durable.items.killed,
        "durable_items_repeated_in_workers_cut_off_past_their_lease": durable.items.outage,
        "durable_items_repeated_elsewhere": durable.items.other,
        "seconds": (took.as_secs_f64() * 10.0).round() / 10.0,
    });
    println!("RESULT chaos {result}");
}

/// Runs `cmd` on a fresh connection (Redis may have restarted since the last one).
async fn query<T: redis::FromRedisValue>(redis: &RedisServer, cmd: &mut redis::Cmd) -> T {
    cmd.query_async(&mut redis.client().await)
        .await
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// The worker processes, one per slot; each slot's stderr goes to a log file, appended to
/// across respawns, printed when the test fails.
struct Fleet {
    url: String,
    /// Slot 2 reaches Redis through this.
    proxied_url: String,
    children: Vec<Child>,
    // Declared last so the logs outlive the processes writing them.
    dir: TempDir,
}

impl Fleet {
    fn start(url: &str, proxied_url: &str) -> Fleet {
        let dir = tempfile::Builder::new()
            .prefix("gator-chaos-")
            .tempdir()
            .expect("a temp dir for the worker logs");
        let mut fleet = Fleet {
            url: url.to_owned(),
            proxied_url: proxied_url.to_owned(),
            children: Vec::new(),
            dir,
        };
        fleet.children = (0..WORKERS).map(|slot| fleet.spawn(slot)).collect();
        fleet
    }

    fn log(&self, slot: usize) -> PathBuf {
        self.dir.path().join(format!("worker-{slot}.log"))
    }

    /// Every line of every worker's log that contains `needle`.
    fn log_lines(&self, needle: &str) -> Vec<String> {
        (0..WORKERS)
            .flat_map(|slot| {
                let log = std::fs::read_to_string(self.log(slot)).unwrap_or_default();
                let found: Vec<String> = log
                    .lines()
                    .filter(|line| line.contains(needle))
                    .map(str::to_owned)
                    .collect();
                found
            })
            .collect()
    }

    /// Starts the worker of `slot` (again, after a kill, the same way):
    /// - slot 0: 10,000 processors on the wide queue's IO-bound jobs, `--worker-id chaos-0`, so a
    ///   restart takes over its predecessor's jobs at once;
    /// - slot 1: its clock 5 minutes ahead (libfaketime);
    /// - slot 2: connected through the proxy that the chaos silences.
    fn spawn(&self, slot: usize) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log(slot))
            .expect("open a worker log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_gator-test-worker"));
        command.args(["--shutdown-timeout", "5s"]);
        match slot {
            0 => command
                .args(["--redis-url", &self.url, "--queues", WIDE_QUEUE])
                .args([
                    "--concurrency",
                    &WIDE_CONCURRENCY.to_string(),
                    "--worker-id",
                    "chaos-0",
                ]),
            1 => command
                .args(["--redis-url", &self.url, "--queues", QUEUE_SPEC])
                .args(["--concurrency", &CONCURRENCY.to_string()])
                .env("LD_PRELOAD", libfaketime())
                .env("FAKETIME", "+5m")
                .env("FAKETIME_DONT_RESET", "1"),
            _ => command
                .args(["--redis-url", &self.proxied_url, "--queues", QUEUE_SPEC])
                .args(["--concurrency", &CONCURRENCY.to_string()]),
        };
        command
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start a worker process")
    }

    fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    /// SIGSTOPs the worker in `slot`; returns its pid.
    ///
    /// # Panics
    /// If the worker exited by itself: a worker must survive everything but a SIGKILL.
    fn freeze(&mut self, slot: usize) -> u32 {
        let child = &mut self.children[slot];
        let exited = child.try_wait().expect("poll a worker");
        assert!(
            exited.is_none(),
            "worker {slot} exited by itself: {exited:?}"
        );
        let pid = child.id();
        signal("-STOP", pid);
        pid
    }

    /// SIGSTOPs every worker.
    fn freeze_all(&self) {
        for child in &self.children {
            signal("-STOP", child.id());
        }
    }

    /// SIGCONTs every worker.
    fn thaw_all(&self) {
        for child in &self.children {
            signal("-CONT", child.id());
        }
    }

    /// SIGKILLs the worker in `slot`: no code of its own runs, as in a crash.
    fn kill(&mut self, slot: usize) {
        let child = &mut self.children[slot];
        child.kill().expect("SIGKILL a worker");
        child.wait().expect("reap a killed worker");
    }

    fn respawn(&mut self, slot: usize) {
        self.children[slot] = self.spawn(slot);
    }

    /// SIGTERMs every worker and waits for them to exit.
    fn stop(&mut self) -> Vec<std::process::ExitStatus> {
        for child in &self.children {
            signal("-TERM", child.id());
        }
        let children = &mut self.children;
        children
            .iter_mut()
            .map(|c| c.wait().expect("wait for a worker"))
            .collect()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for slot in 0..self.children.len() {
                let log = std::fs::read_to_string(self.log(slot)).unwrap_or_default();
                let lines: Vec<&str> = log.lines().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                eprintln!("---- worker {slot} log (last 40 lines) ----\n{tail}");
            }
            self.dir.disable_cleanup(true);
            eprintln!(
                "---- worker logs kept in {} ----",
                self.dir.path().display()
            );
        }
        for child in &mut self.children {
            let _ = child.kill(); // Err only means it already exited.
            let _ = child.wait();
        }
    }
}
