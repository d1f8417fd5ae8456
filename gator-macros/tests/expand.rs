//! The code `#[job]` generates runs, without Redis: `execute` calls the fn with its decoded
//! arguments, errors become `JobError`s, every job is in the inventory, and the arguments
//! are a JSON array.

use gator_core::flow::FlowOptions;
use gator_core::{
    CancellationToken, Context, Execution, Job, JobError, JobInfo, JobResult, Registry, State,
    StateMap, job,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What the jobs did; each test uses its own tag, as tests run in parallel.
static RUNS: Mutex<Vec<String>> = Mutex::new(Vec::new());

// A panicking test must not hide the runs from the others.
fn runs_lock() -> MutexGuard<'static, Vec<String>> {
    RUNS.lock().unwrap_or_else(PoisonError::into_inner)
}

fn runs(tag: &str) -> Vec<String> {
    runs_lock()
        .iter()
        .filter(|run| run.starts_with(tag))
        .cloned()
        .collect()
}

#[derive(Debug, Serialize, Deserialize)]
struct Order {
    id: u64,
}

#[job(queue = "mail")]
fn send_sync(tag: String, n: u32, order: Order) -> Result<(), String> {
    if n == 0 {
        return Err(format!("nothing to send for order {}", order.id));
    }
    runs_lock().push(format!("{tag} sync n={n} order={}", order.id));
    Ok(())
}

#[job(name = "expand.async", queue = "async-q")]
async fn send_async(tag: String) -> Result<(), JobError> {
    tokio::task::yield_now().await;
    if tag.is_empty() {
        return Err(JobError::discard("empty tag"));
    }
    runs_lock().push(format!("{tag} async"));
    Ok(())
}

#[job]
fn tick() {
    runs_lock().push("tick".to_owned());
}

#[job]
async fn tock(mut count: u32) {
    count += 1;
    runs_lock().push(format!("tock {count}"));
}

#[job]
fn pair(label: String, count: u32) {
    runs_lock().push(format!("{label} pair {count}"));
}

/// A context for a first attempt with no state, as a worker would make.
fn ctx() -> Context {
    ctx_with(StateMap::default())
}

fn ctx_with(states: StateMap) -> Context {
    let info = JobInfo {
        jid: "jid-1".into(),
        job_name: "ctx_job".into(),
        queue: "q".into(),
        attempt: 1,
        created_at_ms: 1_000,
        enqueued_at_ms: 2_000,
        chain_id: None,
    };
    Context::new(info, states, CancellationToken::new())
}

#[derive(Clone, Debug)]
struct Greeting(String);

/// Takes its context between two wire arguments, and state twice over.
#[job]
async fn ctx_job(
    tag: String,
    ctx: Context,
    State(greeting): State<Greeting>,
    n: u32,
    count: gator_core::State<u64>,
) {
    runs_lock().push(format!(
        "{tag} {} {} attempt={} n={n} count={} on {}",
        greeting.0,
        ctx.jid(),
        ctx.attempt(),
        count.0,
        ctx.queue()
    ));
}

#[job]
fn sync_ctx_job(tag: String, ctx: Context, State(greeting): State<Greeting>) -> Result<(), String> {
    if ctx.is_cancelled() {
        return Err("cancelled".into());
    }
    runs_lock().push(format!("{tag} {} {}", greeting.0, ctx.job_name()));
    Ok(())
}

/// Runs the work as the worker would: `Blocking` on this thread, `Async` on an executor.
fn run(execution: Execution) -> JobResult {
    match execution {
        Execution::Blocking(work) => work(),
        Execution::Async(work) => tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime needs no resources that can run out")
            .block_on(work),
    }
}

#[test]
fn sync_job_runs_its_fn_blocking_with_the_args() {
    let execution = <SendSync as Job>::execute(("t1".to_owned(), 3, Order { id: 7 }), ctx());
    assert!(matches!(execution, Execution::Blocking(_)), "{execution:?}");
    assert!(runs("t1").is_empty(), "execute must not run the job yet");
    run(execution).unwrap();
    assert_eq!(runs("t1"), ["t1 sync n=3 order=7"]);
}

#[test]
fn async_job_runs_its_fn_as_a_future_with_the_args() {
    let execution = <SendAsync as Job>::execute(("t2".to_owned(),), ctx());
    assert!(matches!(execution, Execution::Async(_)), "{execution:?}");
    run(execution).unwrap();
    assert_eq!(runs("t2"), ["t2 async"]);
}

#[test]
fn jobs_without_params_or_result_run() {
    run(<Tick as Job>::execute([], ctx())).unwrap();
    run(<Tock as Job>::execute((41,), ctx())).unwrap();
    assert_eq!(runs("tick"), ["tick"]);
    assert_eq!(runs("tock"), ["tock 42"]);
}

#[test]
fn an_err_becomes_a_retryable_job_error_with_its_message() {
    let err = run(<SendSync as Job>::execute(
        ("t3".to_owned(), 0, Order { id: 9 }),
        ctx(),
    ))
    .unwrap_err();
    assert_eq!(err.message(), "nothing to send for order 9");
    assert!(err.is_retryable());
    assert!(runs("t3").is_empty());
}

#[test]
fn a_job_error_is_kept_as_is() {
    let err = run(<SendAsync as Job>::execute((String::new(),), ctx())).unwrap_err();
    assert_eq!(err, JobError::discard("empty tag"));
}

#[test]
fn every_job_is_in_the_inventory_with_its_name_and_queue() {
    let registry = Registry::from_inventory().unwrap();
    assert_eq!(
        registry.names(),
        [
            "by_type",
            "ctx_job",
            "expand.async",
            "nightly",
            "no_flow",
            "pair",
            "region_sync",
            "send_sync",
            "sync_ctx_job",
            "tenant_sync",
            "tick",
            "tock",
            "unique_debounced"
        ]
    );
    let queues: Vec<_> = registry
        .names()
        .iter()
        .map(|name| registry.get(name).unwrap().queue)
        .collect();
    assert_eq!(
        queues,
        [
            "default", "default", "async-q", "batch", "default", "default", "partner", "mail",
            "default", "default", "default", "default", "default"
        ]
    );
    let sync = registry.get("send_sync").unwrap();
    assert!(
        sync.defined_at.starts_with("expand::send_sync at "),
        "{}",
        sync.defined_at
    );
    assert!(
        sync.defined_at.contains("expand.rs:"),
        "{}",
        sync.defined_at
    );
}

#[test]
fn the_registration_decodes_a_json_array_and_runs_the_job() {
    let registry = Registry::from_inventory().unwrap();
    let execution = (registry.get("send_sync").unwrap().run)(
        &json!(["t4", 5, { "id": 11 }]).to_string(),
        ctx(),
    )
    .unwrap();
    run(execution).unwrap();
    assert_eq!(runs("t4"), ["t4 sync n=5 order=11"]);
    let wrong = (registry.get("send_sync").unwrap().run)(
        &json!(["t4", "five", { "id": 11 }]).to_string(),
        ctx(),
    );
    assert!(wrong.is_err());
}

#[test]
fn args_are_a_json_array_of_the_params() {
    let none: <Tick as Job>::Args = [];
    assert_eq!(serde_json::to_value(none).unwrap(), json!([]));
    let one: <SendAsync as Job>::Args = ("a".to_owned(),);
    assert_eq!(serde_json::to_value(&one).unwrap(), json!(["a"]));
    let three: <SendSync as Job>::Args = ("a".to_owned(), 2, Order { id: 3 });
    assert_eq!(
        serde_json::to_value(&three).unwrap(),
        json!(["a", 2, { "id": 3 }])
    );
    let two: <Pair as Job>::Args = ("x".to_owned(), 5);
    assert_eq!(serde_json::to_value(&two).unwrap(), json!(["x", 5]));
    run(<Pair as Job>::execute(two, ctx())).unwrap();
    assert_eq!(runs("x pair"), ["x pair 5"]);
}

#[test]
fn call_builds_a_pending_job_on_the_default_queue() {
    let pending = SendSync::call("t5".to_owned(), 1, Order { id: 1 });
    assert_eq!(pending.queue_name(), "mail");
    assert_eq!(pending.args().0, "t5");
    assert_eq!(
        SendAsync::call("t5".to_owned()).queue("other").queue_name(),
        "other"
    );
    assert_eq!(Tick::call().queue_name(), "default");
}

#[test]
fn context_and_state_are_not_wire_arguments() {
    let args: <CtxJob as Job>::Args = ("t6".to_owned(), 4);
    assert_eq!(serde_json::to_value(&args).unwrap(), json!(["t6", 4]));
    let pending = CtxJob::call("t6".to_owned(), 4);
    assert_eq!(pending.args().1, 4);
    let needs: Vec<String> = <CtxJob as Job>::STATES
        .iter()
        .map(|need| need.type_name().to_owned())
        .collect();
    assert_eq!(needs, ["expand::Greeting", "u64"]);
    assert!(<Tick as Job>::STATES.is_empty());
}

#[test]
fn async_and_sync_jobs_get_their_context_and_state_in_any_position() {
    let mut states = StateMap::default();
    states.insert(Greeting("hello".into()));
    states.insert(7u64);
    run(<CtxJob as Job>::execute(
        ("t7".to_owned(), 3),
        ctx_with(states.clone()),
    ))
    .unwrap();
    assert_eq!(runs("t7"), ["t7 hello jid-1 attempt=1 n=3 count=7 on q"]);
    run(<SyncCtxJob as Job>::execute(
        ("t8".to_owned(),),
        ctx_with(states.clone()),
    ))
    .unwrap();
    assert_eq!(runs("t8"), ["t8 hello ctx_job"]);
    let cancelled = ctx_with(states);
    cancelled.cancel();
    let err = run(<SyncCtxJob as Job>::execute(("t9".to_owned(),), cancelled)).unwrap_err();
    assert_eq!(err.message(), "cancelled");
}

#[test]
fn a_state_missing_at_run_time_fails_the_attempt_naming_the_type() {
    let err = run(<SyncCtxJob as Job>::execute(("t10".to_owned(),), ctx())).unwrap_err();
    assert!(
        err.message().contains("expand::Greeting"),
        "{}",
        err.message()
    );
    assert!(err.is_retryable());
    assert!(runs("t10").is_empty());
}

#[job(queue = "partner", priority = 10, cost = 2, limit_key = region, rate = "partner_api")]
async fn region_sync(batch: u64, region: String) {
    let _ = (batch, region);
}

#[job(queue = "batch", critical, windows = ["05:00-07:00", "22:00-02:00"], tz = "Europe/Berlin")]
fn nightly(day: String) {
    let _ = day;
}

#[job]
fn no_flow(n: u32) {
    let _ = n;
}

/// The key is a wire argument after a `Context` and a `State`: it is read from `Args` at its
/// index among the wire arguments, whatever type it has (here a `u64`, by its `Display`).
#[job(limit_key = tenant, priority = 9999)]
async fn tenant_sync(ctx: Context, State(greeting): State<Greeting>, label: String, tenant: u64) {
    let _ = (ctx, greeting, label, tenant);
}

/// A job with one argument (`Args` is `(T,)`), named with a raw identifier.
#[job(limit_key = r#type, priority = 0, cost = 1)]
fn by_type(r#type: String) {
    let _ = r#type;
}

#[test]
fn flow_options_come_from_the_attribute_and_the_limit_key_from_the_named_argument() {
    let flow = <RegionSync as Job>::flow(&(7, "east".to_owned()));
    assert_eq!(flow.priority, Some(10));
    assert_eq!(flow.cost, Some(2));
    assert_eq!(flow.key.as_deref(), Some("east"));
    assert_eq!(flow.rate.as_deref(), Some("partner_api"));
    assert!(!flow.critical);
    assert!(flow.windows.is_empty());

    let flow = <Nightly as Job>::flow(&("2026-11-25".to_owned(),));
    assert!(flow.critical);
    assert_eq!(flow.windows, vec!["05:00-07:00", "22:00-02:00"]);
    assert_eq!(flow.tz.as_deref(), Some("Europe/Berlin"));
    assert_eq!(flow.priority, None);
    assert!(flow.parsed_windows().unwrap().is_some());

    assert!(<NoFlow as Job>::flow(&(1,)).is_empty());
    assert!(<Tick as Job>::flow(&[]).is_empty());
    assert_eq!(
        <TenantSync as Job>::flow(&("t".to_owned(), 42)),
        FlowOptions {
            priority: Some(9999),
            key: Some("42".to_owned()),
            ..FlowOptions::default()
        }
    );
    assert_eq!(
        <ByType as Job>::flow(&("pdf".to_owned(),)),
        FlowOptions {
            priority: Some(0),
            cost: Some(1),
            key: Some("pdf".to_owned()),
            ..FlowOptions::default()
        }
    );
    // The whole value, so no option is set that the attribute did not give.
    assert_eq!(
        <Nightly as Job>::flow(&("d".to_owned(),)),
        FlowOptions {
            critical: true,
            windows: vec!["05:00-07:00".to_owned(), "22:00-02:00".to_owned()],
            tz: Some("Europe/Berlin".to_owned()),
            ..FlowOptions::default()
        }
    );
    assert!(
        <RegionSync as Job>::flow(&(1, "x".to_owned()))
            .validate()
            .is_ok()
    );
    // The key is read from each job's own arguments.
    assert_eq!(
        RegionSync::call(1, "south".to_owned())
            .flow_options()
            .key
            .as_deref(),
        Some("south")
    );
    // A dispatch's builder methods override the job's own options.
    let pending = RegionSync::call(1, "west".to_owned())
        .priority(3)
        .limit_key("north");
    assert_eq!(pending.flow_options().priority, Some(3));
    assert_eq!(pending.flow_options().key.as_deref(), Some("north"));
    assert_eq!(pending.flow_options().cost, Some(2));
}

#[job(unique_for = "10m", unique_until = "start", debounce = "5s")]
fn unique_debounced(n: u32) {
    let _ = n;
}

#[test]
fn unique_options_come_from_the_attribute_and_a_dispatch_may_change_them() {
    use gator_core::unique::{DEFAULT_UNIQUE_FOR, UniqueOptions, UniqueUntil};
    use std::time::Duration;
    let expected = UniqueOptions {
        ttl: Duration::from_secs(600),
        until: UniqueUntil::Start,
        debounce: Some(Duration::from_secs(5)),
    };
    assert_eq!(UniqueDebounced::UNIQUE, Some(expected));
    assert_eq!(UniqueDebounced::call(1).unique_options(), Some(&expected));
    // A job without the options is not unique until a dispatch asks.
    assert_eq!(NoFlow::UNIQUE, None);
    assert_eq!(NoFlow::call(1).unique_options(), None);
    let keyed = NoFlow::call(1).unique_key("k");
    assert_eq!(
        keyed.unique_options(),
        Some(&UniqueOptions::new(DEFAULT_UNIQUE_FOR))
    );
    let changed = UniqueDebounced::call(1)
        .unique_for(Duration::from_secs(60))
        .unique_until(UniqueUntil::Success);
    assert_eq!(
        changed.unique_options().map(|u| (u.ttl, u.until)),
        Some((Duration::from_secs(60), UniqueUntil::Success))
    );
}
