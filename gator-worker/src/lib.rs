//! The Gator worker: runs the `#[job]`s linked into the binary, taking them from Redis.
//!
//! Your app gets a three-line worker binary; linking your crate registers its jobs:
//!
//! ```no_run
//! // src/bin/worker.rs
//! use my_app as _; // links the crate that defines the #[job]s
//! fn main() -> std::process::ExitCode {
//!     gator_worker::main()
//! }
//! # mod my_app {}
//! ```
//!
//! Then `worker --queues high:3,default:1 --concurrency 10` (see `--help`), or
//! `worker dead list` and the other admin subcommands (`cli`, with the `cli` feature, on by
//! default) to inspect and repair the sets.
//!
//! Or run a worker inside your own tokio app, next to an HTTP server:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use gator_worker::{CancellationToken, Worker};
//! let worker = Worker::builder().queues("high:3,default:1").build()?;
//! let stop = CancellationToken::new();
//! let running = tokio::spawn(worker.run_until(stop.clone()));
//! stop.cancel(); // when the app shuts down
//! running.await??;
//! # Ok(()) }
//! ```
//!
//! # Pieces
//! - [`builder`]: a worker configured in code, checked at `build()`;
//! - [`launcher`]: start → run → stop: starts the pieces and stops them in order;
//! - [`queues`]: the `--queues` spec and the order to try the queues in (strict, weighted
//!   shuffle, all known);
//! - [`fetcher`]: takes each processor's next job into this process's in-flight lists, and only
//!   fetches; [`watchers`]: the idle processors that block in Redis while every queue is empty;
//!   [`admission`]: fetching from queues under flow control;
//! - [`processor`]: fetch → gate → resolve → decode → prepare → run → classify → settle,
//!   `--concurrency` of them, with [`run`] (job bodies) and [`outcome`] (what a failure records);
//! - [`settle`]: the one place that writes outcomes (success, success and the next job, retry,
//!   kill, put back, the successes of jobs under flow control);
//! - [`poller`]: moves due scheduled and retry jobs into their queues;
//! - [`leases`]: this process's lease on each queue, on Redis's clock;
//! - [`heartbeat`]: renews the leases, registers the process, checks eviction ([`memory`]) and
//!   learns Redis's clock ([`clock`]);
//! - [`recovery`]: every put-back: dead processes' jobs, lost fetch replies, shutdown;
//! - [`catalogue`]: the jobs this worker publishes in the job catalogue, and whether a job it
//!   does not run is run elsewhere (then it hands it back);
//! - [`outbox`]: with `--outbox URL` (the `postgres` feature), the relay of the transactional
//!   outbox on PostgreSQL, one per worker process;
//! - `cli` (the `cli` feature, on by default): the admin subcommands (`dead list`, `queue
//!   pause`, `stats` ...). An application that embeds a worker and needs no subcommands can
//!   leave them out, and comfy-table with them:
//!   `gator-worker = { version = "0.9", default-features = false }`.
//!
//! # Tracing events
//! Every event at `info` and above that the worker (and the client inside it) emits is listed
//! here; `tests/events_catalogue.rs` checks this list against the code both ways. A message
//! ending in `…` is the start of a longer one. Every job runs in a span `job` with the fields
//! `jid`, `job` (wire name), `queue` and `attempt` (1 for the first run). Inside it:
//!
//! | level | message | fields |
//! |---|---|---|
//! | info | `job started` | |
//! | info | `job finished` | `duration_ms`, `outcome = "done"` |
//! | warn | `job failed; will retry` | `duration_ms`, `outcome = "retry"`, `error`, `retry_in_ms` |
//! | error | `job failed; moved to the dead set` | `duration_ms`, `outcome = "dead"`, `error`, `why` |
//! | warn | `job failed; discarded by its retry strategy` | `duration_ms`, `outcome = "discarded"`, `error` |
//! | info | `outside the job's time windows: rescheduled to the next opening` | `delay_ms` |
//! | info | `job awaits a reply` | `key`, `timeout_ms` |
//! | info | `job cancelled`, `job cancelled before it started` | `duration_ms`, `outcome = "cancelled"` (after a run) |
//! | info | `job expired before it started: not run` | `deadline_ms` |
//! | warn | `cannot read Redis's clock to check the job's deadline; putting it back` | `error` |
//! | info | `job interrupted by the worker's shutdown: it goes back to the head of its queue, its attempt not counted` | `duration_ms`, `outcome = "interrupted"`, `error` (none if it returned `Ok` without `ctx.finished_despite_shutdown()`) |
//! | info | `job interrupted: it runs again in a second, its attempt not counted` | `duration_ms`, `outcome = "interrupted"`, `error` |
//! | warn | `the job's checkpoint does not read as the type asked for: it starts afresh` | `error` (from `ctx.resume`) |
//! | info | `job suspended: it resumes at its time with what it saved` | `duration_ms`, `outcome = "suspended"`, `reason` (`sleep 2`, `slice 3`) |
//! | info | `job cancelled: telling it to stop` | `jid` |
//! | warn | `cannot read Redis's clock to check the job's time windows; running it` | `error` |
//! | warn | `could not release the job's unique lock as it starts; its TTL will` | `error` |
//! | warn | `could not record a job's progress` | `error` (the next report, or the last, replaces it) |
//!
//! Worker-level:
//!
//! | level | message | fields |
//! |---|---|---|
//! | info | `worker started` | `redis_url` (password redacted), `server` (`redis 7.0.15`, `valkey 9.1.2`), `queues`, `concurrency`, `namespace`, `jobs` |
//! | error | `this server cannot run Gator's scripts: …` | `reason` (`Gator needs Redis 7.0 or newer; this server is redis 6.2.14`) |
//! | warn | `could not tell which server answers` | `error` |
//! | info | `registered` | `process` (the id in `gator:processes` and the lease sets), `lease_ms` |
//! | info | `signal received: shutting down` | |
//! | info | `stopping: waiting for running jobs to finish` | `timeout` |
//! | info | `worker stopped cleanly` | |
//! | info | `leases renewed again: fetching resumes` | |
//! | error | `cannot reach redis; retrying` | `redis_url`, `error`, `retry_in_s` |
//! | error | `cannot connect to redis` (a bad URL or TLS file: the worker stops) | `redis_url`, `error` |
//! | error | `cannot listen for SIGINT/SIGTERM; …` | |
//! | error | `cannot renew this process's leases: …` | `error`, `lease_ms` |
//! | error | `redis may evict keys under memory pressure, …` | `maxmemory_policy`, `maxmemory` |
//! | error | `malformed payload: moved to the dead set as it was` | `queue`, `error` |
//! | error | `cannot record a job's outcome, and trying again will not help: …` | `queue`, `error` |
//! | error | `could not put this process's in-flight jobs back: …` | `queue`, `error` |
//! | error | `a success's batch was lost with the processor that carried it: …` (a panic while writing a batch of successes; the job is put back when the process stops) | |
//! | error | `panicked while handling a job; recording it as a failure` | `queue`, `panic` |
//! | error | `panicked while recording a job's outcome: …` | `queue`, `panic` |
//! | warn | `fetch failed` | `error`, `retry_in_ms` |
//! | warn | `Redis is unreachable: fetches and writes are retried with backoff; one summary every 10 s until it is back` | `error` (once per outage; its failures are not logged one by one, see `outage`) |
//! | warn | `Redis is still unreachable` | `error`, `down_s`, `failures` (every 10 s of an outage) |
//! | info | `Redis is reachable again` | `down_ms`, `failures` |
//! | warn | `cannot record a job's outcome; trying again` | `queue`, `error`, `retry_in_ms` |
//! | warn | `could not fetch from the queue; trying the others` | `queue`, `error` |
//! | warn | `could not renew the lease after a recovery` | `queue`, `error` |
//! | warn | `could not read the known queues yet`, `could not read the known queues; recovering the served ones only` | `error` |
//! | warn | `could not record the served queues as known` | `error` |
//! | warn | `could not take a lease on the queue yet; the first fetch takes it` | `queue`, `error` |
//! | warn | `first heartbeat failed`, `heartbeat failed; trying again` | `error` |
//! | warn | `could not deregister this process; …` | `error` |
//! | warn | `a fetch is still under way: …` | |
//! | warn | `could not promote due jobs; trying again next pass` | `error` |
//! | warn | `could not promote the queue's due jobs; …`, `could not recover the queue's in-flight jobs of dead processes; …` | `queue`, `error` |
//! | warn | `could not trim the queue's finished jobs' records; …` | `queue`, `error` |
//! | info | `published the periodic jobs declared in code` | `entries` |
//! | warn | `could not fire periodic jobs; trying again next pass` | `error` |
//! | warn | `a global key holds data Gator did not write: what reads it sees it empty, what needs it is refused; delete or repair it with redis-cli` | `key`, `reason` (at most once per key every 10 minutes) |
//! | warn | `could not fire a periodic job; trying again next pass` | `entry`, `tick`, `error` |
//! | warn | `a periodic entry cannot be read; skipped` | `entry`, `error` |
//! | warn | `could not look for stranded in-flight jobs` | `queue`, `error` |
//! | warn | `could not put back a stranded in-flight job; …` | `queue`, `error` |
//! | warn | `could not put back a job taken ahead of a pause; …` | `queue`, `error` |
//! | warn | `shutdown: successes of jobs under flow control not written in time; …` | `queue` |
//! | warn | `could not delete the waiting steps of chains whose dead step was trimmed` | `error`, `chains` |
//! | warn | `could not hand a chain's next step to its queue yet; …` | `queue`, `error` |
//! | warn | `could not drain the queue's outbox of chain hand-offs; …` | `queue`, `error` |
//! | warn | `could not report a workflow step's death to its workflow yet; …` | `queue`, `error` |
//! | warn | `could not push the released steps of the queue's workflows; …` | `queue`, `error` |
//! | warn | `could not report a workflow step's end to its workflow yet; …` | `queue`, `error` |
//! | warn | `could not hand a replied job's chain or workflow on yet; …` | `queue`, `error` |
//! | warn | `could not read which jobs were cancelled; trying again` | `error` |
//! | warn | `waits for replies timed out` | `waits` |
//! | warn | `could not end the waits for replies that timed out; …`, `could not carry replies to their jobs; …` | `error` |
//! | warn | `could not register a job's wait for its reply yet; …` | `queue`, `error` |
//! | warn | `this process's lease had expired (…` | `queue`, `process` |
//! | warn | `job was no longer in flight: …` | `queue`, `jobs` |
//! | warn | `outcomes dropped: this process's lease on the queue ran out …` | `queue`, `jobs` |
//! | warn | `recovered the in-flight jobs of a dead worker process` | `queue`, `process`, `jobs` |
//! | warn | `put back in-flight jobs whose fetch reply was lost or whose outcome could not be written` | `jobs` |
//! | warn | `put unfinished jobs back at the head of their queues` | `jobs` |
//! | warn | `redis did not answer in time: replaced the shared connection` | |
//! | warn | `redis did not answer in time, and a new connection failed too; …` | `error` |
//! | warn | `the master was lost: reconnected to the master the sentinels name now` | |
//! | warn | `the master was lost, and the sentinels name no reachable master yet; …` | `error` |
//! | warn | `ignoring an invalid queue name in the known-queues set` | `queue`, `set` |
//! | warn | `could not record the queue's statistics; trying again in a second` | `queue`, `error` |
//! | warn | `could not sample the queue for its metrics` (metrics on only) | `queue`, `error` |
//! | warn | `could not sample the queues for their scaling gauges` (metrics on only) | `error` |
//! | info | `this worker runs only some of the jobs on this queue: jobs it does not run are handed back, unrun and with no attempt used, for the workers that run them (give them a queue of their own to save the detour)` (at start, from the job catalogue) | `queue`, `jobs` |
//! | info | `this worker does not run this job: handing it back, with no attempt used, for the workers that run it` (once per job name) | `job`, `queue` |
//! | warn | `this worker's definition of the job differs from the catalogue's, which another live worker wrote: …` | `job`, `writer` |
//! | warn | `the job catalogue is full: this job is not in it, and producers by name refuse it unless forced` | `job`, `max` |
//! | warn | `could not publish this worker's jobs in the job catalogue; retrying at the next renewal` | `error` |
//! | warn | `could not read the job catalogue` | `error`, `job` (when one was asked for) |
//! | warn | `could not give up this worker's leases in the job catalogue; they end within 60 s` | `error` |
//! | info | `outbox relay started` (with --outbox, the postgres feature) | `relay` (the process id), `database` (no password), `batch` |
//! | error | `the outbox table does not exist: …` (the relay waits for gator-worker outbox migrate, looking again every 10 s) | `database`, `table` |
//! | warn | `cannot reach the outbox database; retrying` | `database`, `error`, `retry_in_s` |
//!
//! `RUST_LOG` filters them (default `info`).

// A published crate: every public item is documented (the workspace only warns).
#![deny(missing_docs)]

pub mod admission;
pub mod alarm;
pub mod audible;
pub mod builder;
pub mod cancellation;
pub mod catalogue;
#[cfg(feature = "cli")]
pub mod cli;
pub mod clock;
pub mod config;
pub mod cron;
pub(crate) mod door;
pub mod durable;
pub mod fetcher;
pub mod gather;
pub mod heartbeat;
pub mod held;
pub mod identity;
pub mod launcher;
pub mod leases;
pub mod memory;
pub mod middleware;
pub mod observer;
pub mod outage;
pub mod outbox;
pub mod outcome;
pub mod poller;
pub mod processor;
pub mod progress;
pub mod prometheus;
pub mod pruner;
pub mod queues;
pub mod recovery;
pub mod run;
mod runtime;
pub mod scaling_gauges;
pub mod settle;
pub mod slot;
pub mod watchers;

pub use builder::{BuildError, WorkerBuilder};
pub use config::{Cli, QueueSelection, WorkerConfig};
pub use launcher::Worker;
/// Stops a worker run with [`Worker::run_until`]; re-exported so no extra crate is needed.
pub use tokio_util::sync::CancellationToken;

use clap::Parser;
use std::process::ExitCode;

/// The whole `gator-worker` program: parses the command line, logs to stderr (`RUST_LOG`,
/// default `info`), runs until SIGINT/SIGTERM and returns the exit code (or runs an
/// admin subcommand such as `dead list` instead of the worker, with the `cli` feature). Call it from your
/// worker binary's `main`.
pub fn main() -> ExitCode {
    main_with(|worker| worker)
}

/// [`main`], with the worker builder passed through `configure` after the command line set
/// it up: give jobs their state in a worker binary.
///
/// ```no_run
/// #[derive(Clone)]
/// struct Mailer;
///
/// fn main() -> std::process::ExitCode {
///     gator_worker::main_with(|worker| worker.state(Mailer))
/// }
/// ```
pub fn main_with(configure: impl FnOnce(WorkerBuilder) -> WorkerBuilder) -> ExitCode {
    let mut cli = Cli::parse();
    if let Some(command) = cli.command.take() {
        return run_command(command, &cli);
    }
    if let Some(refusal) = cli.outbox.refusal() {
        eprintln!("gator-worker: {refusal}");
        return ExitCode::FAILURE;
    }
    let metrics_bind = cli.metrics_bind;
    let worker = match configure(WorkerBuilder::from_config(cli.into_config()))
        .install_default_client()
        .build()
    {
        Ok(worker) => worker,
        Err(e) => {
            eprintln!("gator-worker: {e}");
            return ExitCode::FAILURE;
        }
    };
    audible::log_to_stderr();
    let Some(runtime) = runtime::start(tokio::runtime::Builder::new_multi_thread()) else {
        return ExitCode::FAILURE;
    };
    if let Some(addr) = metrics_bind
        && let Err(e) = runtime.block_on(async { prometheus::serve(addr) })
    {
        eprintln!("gator-worker: {e}");
        return ExitCode::FAILURE;
    }
    let result = runtime.block_on(worker.run());
    // Sync jobs abandoned at the shutdown timeout may still occupy blocking threads; their
    // jobs are back in their queues, so do not wait for them.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gator-worker: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs an admin subcommand instead of the worker.
#[cfg(feature = "cli")]
fn run_command(command: config::Command, cli: &Cli) -> ExitCode {
    // `--outbox` is global: it reaches the outbox subcommands through the top-level flags.
    #[cfg(feature = "postgres")]
    let command = match command {
        cli::AdminCommand::Outbox(mut args) => {
            args.database = cli.outbox.database.clone();
            cli::AdminCommand::Outbox(args)
        }
        command => command,
    };
    cli::main(
        command,
        &cli.redis_url,
        &cli.namespace,
        cli.tls(),
        cli.redis_cluster,
    )
}

/// There are no subcommands without the `cli` feature.
#[cfg(not(feature = "cli"))]
fn run_command(command: config::Command, _cli: &Cli) -> ExitCode {
    match command {}
}
