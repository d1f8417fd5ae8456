//! The admin subcommands of `gator-worker`: inspect and repair the fleet's sets and settings
//! instead of running the worker. Behind the `cli` feature (on by default), so an application
//! that embeds a worker need not compile them (nor comfy-table). Results go to stdout, errors to
//! stderr with exit code 1. One file per subcommand:
//!
//! - [`sets`]: `dead|retry|scheduled list|run|delete`, through [`gator_core::admin`];
//! - [`queue`] and [`queue_show`]: `queue pause|limit|rate|...|show`, a queue's flow controls;
//! - [`limiter`]: `limiter set|clear|list`, the rate limiters shared across queues;
//! - [`job`]: `job show|cancel JID`;
//! - [`jobs`]: `jobs` (the job catalogue) and `enqueue JOB [ARGS]` (a dispatch by name);
//! - [`cron`]: `cron list|pause|resume|run|remove`;
//! - [`shards`]: `shards [QUEUE [COUNT]]`;
//! - [`fleet`]: `stats`, `queues` and `processes`;
//! - [`scaling`]: `scaling`, the autoscaling signal;
//! - `outbox` (the `postgres` feature): `outbox [migrate|dead|retry|discard]`, the
//!   transactional outbox on PostgreSQL;
//! - [`table`]: how they print (tables, JSON, ages and times); [`error`]: why one failed.

pub mod cron;
pub mod error;
pub mod fleet;
pub mod job;
pub mod jobs;
pub mod limiter;
#[cfg(feature = "postgres")]
pub mod outbox;
pub mod position;
pub mod queue;
pub mod queue_show;
pub mod scaling;
pub mod sets;
pub mod shards;
pub mod table;

pub use error::AdminError;

use clap::{Args, Subcommand};
use gator_core::{Admin, Client, SetKind};
use std::io::Write;
use std::process::ExitCode;

/// A subcommand that looks into or repairs a set instead of running the worker.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Jobs that will not run again: list them, retry them, delete them.
    #[command(
        long_about = "Jobs that will not run again (retries used up, discarded, or text that is \
        not a payload): list them, retry them with attempt reset to 0, or delete them.\n\n\
        Without --queue, every known queue is searched."
    )]
    Dead {
        /// What to do with the dead set.
        #[command(subcommand)]
        action: sets::DeadAction,
    },
    /// Failed jobs waiting for their next attempt: list them, run them now, delete them.
    #[command(
        long_about = "Failed jobs waiting for their next attempt: list them, run them now \
        (they keep their attempt count), or delete them.\n\n\
        Without --queue, every known queue is searched."
    )]
    Retry {
        /// What to do with the retry set.
        #[command(subcommand)]
        action: sets::SetAction,
    },
    /// Jobs dispatched to run later: list them, run them now, delete them.
    #[command(
        long_about = "Jobs dispatched to run later (dispatch_at, dispatch_in): list them, run \
        them now, or delete them.\n\nWithout --queue, every known queue is searched."
    )]
    Scheduled {
        /// What to do with the scheduled set.
        #[command(subcommand)]
        action: sets::SetAction,
    },
    /// Show or set how many shards a queue is split into.
    #[command(
        long_about = "Show or set how many shards a queue is split into: `shards` lists the \
        sharded queues, `shards default` shows one, `shards default 8` splits `default` into \
        `default#0` … `default#7`, each its own hash tag (so a cluster spreads them over its \
        masters). The count is kept in Redis; producers pick it up within 5 s, workers on their \
        next poll. Jobs already queued stay on their lists and are still drained; while old and \
        new lists are drained side by side, jobs of one shard key may run out of order."
    )]
    Shards(shards::ShardsArgs),
    /// A queue's controls: pause, resume, clear, limit, share, rate, aging, order, windows, show.
    #[command(
        long_about = "Flow control of a queue, for every worker at once (the book's guide, \"Flow \
        control\"): `queue pause mail`, `queue resume mail`, `queue clear mail`, `queue limit partner 10`, `queue \
        share partner east 40`, `queue rate mail 100/1s [--limiter email]`, `queue aging mail \
        30s`, `queue order mail due`, `queue windows batch 22:00-06:00 --tz Europe/Berlin`, \
        `queue show partner [--json]`. The settings live in Redis; a queue given one is under \
        flow control from then on."
    )]
    Queue {
        /// What to do with the queue.
        #[command(subcommand)]
        action: queue::QueueAction,
    },
    /// One job by its jid: its status, attempts, last error and result.
    #[command(
        long_about = "One job by its jid: `job show JID [--json]` prints its status (queued, \
        scheduled, running, retrying, dead, done or unknown), its queue, its attempts, its \
        last error and the result it returned. Every known queue is searched."
    )]
    Job {
        /// What to do with the job.
        #[command(subcommand)]
        action: job::JobAction,
    },
    /// Periodic jobs: list, pause, resume, run now, remove.
    #[command(
        long_about = "Periodic jobs (the book's guide, \"Cron and periodic jobs\"), for every worker at \
        once: `cron list [--json]` shows each entry's schedule, job, queue, state, last and next \
        tick; `cron pause NAME` and `cron resume NAME` stop and restart its ticks (resumed, it \
        waits for its next tick); `cron run NAME` enqueues its job once now; `cron remove NAME` \
        deletes it (one declared in code comes back when a worker that declares it starts)."
    )]
    Cron {
        /// What to do with the periodic jobs.
        #[command(subcommand)]
        action: cron::CronAction,
    },
    /// Totals, the last hour, day and week, and the Redis server.
    #[command(
        long_about = "Totals over every queue (processed and failed, all time; enqueued, busy, \
        scheduled, retries, dead), processed and failed over the last hour, day and week (from \
        the per-minute history workers keep in Redis), and the Redis server's version, memory \
        and clients. `--json` for JSON."
    )]
    Stats(JsonFlag),
    /// Every queue: size, latency, busy, scheduled, retries, dead, paused, limits, parked.
    #[command(
        long_about = "One row per known queue (a shard is its own row): jobs waiting, the age of \
        the oldest one (latency), jobs running, scheduled, retrying and dead, whether it is paused \
        or under flow control, its limit (units in use/limit), parked jobs, and processed and \
        failed all time. `--json` for JSON."
    )]
    Queues(JsonFlag),
    /// Live worker processes and the jobs each is running.
    #[command(
        long_about = "One row per live worker process (host, pid, queues, busy/concurrency, the \
        age of its last heartbeat, its uptime), then every job they are running, with how long it \
        has run. `--json` for JSON."
    )]
    Processes(JsonFlag),
    /// Per queue: backlog, latency, busy/capacity, and the workers suggested for a target.
    #[command(
        long_about = "The autoscaling signal, one row per known queue: jobs waiting (backlog), \
        the age of the oldest (latency), jobs held by live workers over what they may hold \
        (busy/capacity), live workers serving it, attempts ended per second over the last 5 \
        minutes, and the workers suggested to keep the latency under `--target-latency` \
        (default 30s), at most `--max-workers` (default 100). The book, \"Autoscaling the workers\". \
        `--json` for the JSON of `GET /api/scaling`."
    )]
    Scaling(scaling::ScalingArgs),
    /// The job catalogue: every job the workers run, its queue, options and workers.
    #[command(
        long_about = "The job catalogue: every job a live worker (or one seen in the last 7 \
        days) published, with its queue, its parameters, its options (retries, timeout, \
        priority, cost, limit key, rate limiter, windows, no-overlap, unique, expires_in) and the live \
        workers that run it. Producers by name (the HTTP API, `enqueue`) apply these options. \
        `--json` for JSON."
    )]
    Jobs(JsonFlag),
    /// Enqueue a job by its wire name, with the catalogue's options.
    #[command(
        long_about = "Enqueue a job by its wire name: `enqueue send_email '[\"ada@example.com\"]' \
        [--queue Q] [--in 5m] [--expires-in 10m [--drop-expired]] [--fair-key K] [--force]`. \
        The job catalogue gives it its queue and options (its `expires_in`, its fair key's \
        argument) and checks its arguments; an option given here wins. A name no worker \
        published is refused unless `--force`."
    )]
    Enqueue(jobs::EnqueueArgs),
    /// Rate limiters shared across queues: set, clear, list.
    #[command(
        long_about = "Rate limiters shared across queues: `limiter set email 100/1s` limits \
        every job that names `email` (`#[job(rate = \"email\")]`), on every queue that defines \
        no limiter of that name itself; each start costs one more round trip, to the limiter's \
        node on a cluster. `limiter clear email`, `limiter list [--json]`."
    )]
    Limiter {
        /// What to do with the shared limiters.
        #[command(subcommand)]
        action: limiter::LimiterAction,
    },
    /// The transactional outbox on PostgreSQL: status, migrate, dead, retry, discard.
    #[cfg(feature = "postgres")]
    #[command(
        long_about = "The transactional outbox on PostgreSQL (the book's guide, \"Enqueue in a \
        transaction\"), in the database of --outbox (GATOR_OUTBOX_URL): `outbox [--json]` shows \
        the rows waiting for a relay, the dead ones and the lag, then what each relay reported \
        in Redis in the last minute; `outbox migrate` applies the schema (safe to run again); \
        `outbox dead [--limit N --offset N] [--json]` lists the rows Redis refused, with why; \
        `outbox retry ID.. | --all` puts them back for the relays; `outbox discard ID..` deletes \
        them for good."
    )]
    Outbox(outbox::OutboxCommand),
}

/// `--json`.
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Prints JSON instead.
    #[arg(long)]
    pub json: bool,
}

/// Runs `command` against the Redis at `redis_url` under `namespace` (with `tls` for a
/// `rediss://` URL): prints the results to
/// stdout, or the error to stderr, and returns the exit code. Never starts the worker.
pub fn main(
    command: AdminCommand,
    redis_url: &str,
    namespace: &str,
    tls: gator_core::TlsFiles,
    cluster: bool,
) -> ExitCode {
    let Some(runtime) = crate::runtime::start(tokio::runtime::Builder::new_current_thread()) else {
        return ExitCode::FAILURE;
    };
    let result = runtime.block_on(async {
        // Only the outbox's status reads Redis: `outbox migrate` must work before it exists.
        #[cfg(feature = "postgres")]
        let command = match command {
            AdminCommand::Outbox(args) if !args.needs_redis() => {
                return outbox::run(None, args, &mut std::io::stdout()).await;
            }
            command => command,
        };
        let client = Client::builder(redis_url)
            .namespace(namespace)
            .tls(tls)
            .cluster(cluster)
            .connect()
            .await
            .map_err(AdminError::Core)?;
        command
            .run(&Admin::new(client), &mut std::io::stdout())
            .await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Escaped: an error may quote text from Redis.
            eprintln!("gator-worker: {}", gator_rules::escape(&e.to_string()));
            ExitCode::FAILURE
        }
    }
}

impl AdminCommand {
    /// Runs the command with `admin`, writing what it found or did to `out`.
    pub async fn run(self, admin: &Admin, out: &mut impl Write) -> Result<(), AdminError> {
        match self {
            AdminCommand::Dead { action } => {
                sets::run(admin, SetKind::Dead, action.into(), out).await
            }
            AdminCommand::Retry { action } => sets::run(admin, SetKind::Retry, action, out).await,
            AdminCommand::Scheduled { action } => {
                sets::run(admin, SetKind::Scheduled, action, out).await
            }
            AdminCommand::Shards(args) => shards::run(admin, args, out).await,
            AdminCommand::Queue { action } => queue::run(admin, action, out).await,
            AdminCommand::Limiter { action } => limiter::run(admin, action, out).await,
            AdminCommand::Job { action } => job::run(admin, action, out).await,
            AdminCommand::Cron { action } => cron::run(admin, action, out).await,
            AdminCommand::Stats(args) => fleet::stats(admin, args, out).await,
            AdminCommand::Queues(args) => fleet::queues(admin, args, out).await,
            AdminCommand::Processes(args) => fleet::processes(admin, args, out).await,
            AdminCommand::Scaling(args) => scaling::run(admin, args, out).await,
            AdminCommand::Jobs(args) => jobs::list(admin, args, out).await,
            AdminCommand::Enqueue(args) => jobs::enqueue(admin, args, out).await,
            #[cfg(feature = "postgres")]
            AdminCommand::Outbox(args) => outbox::run(Some(admin), args, out).await,
        }
    }
}
