//! What a worker is told: the command line, and the config it parses into (the queue
//! selection is parsed in [`crate::queues`]).

use clap::Parser;
use std::fmt;
use std::time::Duration;

pub use crate::queues::{QueueSelection, QueueSpecError};

/// Everything a worker needs to run; [`crate::Cli`] builds one from the command line. Its
/// `Debug` output shows the URL with its password redacted.
#[derive(Clone)]
pub struct WorkerConfig {
    /// The Redis to work against.
    pub redis_url: String,
    /// The key namespace (default `gator`).
    pub namespace: String,
    /// Which queues, in which order.
    pub queues: QueueSelection,
    /// How many jobs run at once: the number of processors.
    pub concurrency: usize,
    /// How long running jobs get to finish after SIGINT/SIGTERM before they are put back.
    pub shutdown_timeout: Duration,
    /// The average interval between passes that move due scheduled and retry jobs.
    pub poll_interval: Duration,
    /// How much of each queue's dead set to keep.
    pub dead_cap: crate::door::DeadCap,
    /// How long a finished job's status record, and the result it returned, are kept
    /// (`Client::status`, `Client::result`).
    pub retention: Duration,
    /// How many finished jobs' records (done, cancelled, discarded) each queue keeps at most,
    /// the oldest trimmed first (see [`crate::pruner`]).
    pub finished_max_jobs: usize,
    /// The average time between passes that look for dead processes and stranded jobs.
    pub recovery_interval: Duration,
    /// How long this process's lease on each queue lasts unless renewed (it is renewed every
    /// quarter of that). Once it has expired, other workers put its in-flight jobs back in
    /// their queues: the longest a crashed worker's jobs wait before they run again.
    pub lease: Duration,
    /// A name for this worker that is unique among live workers and stays the same across
    /// restarts (a pod or container name). A worker started under a name takes over the jobs
    /// of every earlier process of that name at once, instead of waiting for their leases.
    pub worker_id: Option<String>,
    /// TLS files for a `rediss://` URL; those unset come from `GATOR_REDIS_CA_CERT`,
    /// `GATOR_REDIS_CLIENT_CERT` and `GATOR_REDIS_CLIENT_KEY`.
    pub tls: gator_core::TlsFiles,
    /// Whether a single `redis_url` is the seed of a Redis Cluster.
    pub cluster: bool,
    /// Replicas each dispatch by a job must reach (`None`: `GATOR_WAIT_REPLICAS` decides).
    pub wait: Option<gator_core::ReplicaWait>,
    /// Whether to emit the `metrics` facade's series (see [`crate::observer`]); the
    /// application installs the recorder, or `--metrics-bind` installs Prometheus's.
    pub metrics: bool,
    /// What the autoscaling gauges aim at (`--scaling-target-latency`; see
    /// [`crate::scaling_gauges`]).
    pub scaling: gator_core::admin::ScalingPolicy,
    /// The largest payload its client stores, and above which a fetched job goes to the dead
    /// set unrun (`None`: `GATOR_MAX_PAYLOAD`, else 512 KiB; see
    /// `gator_core::payload::limit`).
    pub max_payload: Option<usize>,
    /// Whether the worker installs a `tracing` subscriber writing to stderr when it starts
    /// and the application installed none ([`crate::WorkerBuilder::log_to_stderr`]).
    pub log_to_stderr: bool,
    /// The outbox relay this worker runs (`--outbox`; see [`crate::outbox`]), if any.
    #[cfg(feature = "postgres")]
    pub outbox: Option<crate::outbox::OutboxConfig>,
}

impl fmt::Debug for WorkerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("WorkerConfig");
        f.field("redis_url", &gator_core::endpoint::redact(&self.redis_url))
            .field("namespace", &self.namespace)
            .field("queues", &self.queues)
            .field("concurrency", &self.concurrency)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("poll_interval", &self.poll_interval)
            .field("dead_cap", &self.dead_cap)
            .field("finished_max_jobs", &self.finished_max_jobs)
            .field("retention", &self.retention)
            .field("recovery_interval", &self.recovery_interval)
            .field("lease", &self.lease)
            .field("worker_id", &self.worker_id)
            .field("tls", &self.tls)
            .field("cluster", &self.cluster)
            .field("wait", &self.wait)
            .field("metrics", &self.metrics)
            .field("max_payload", &self.max_payload)
            .field("log_to_stderr", &self.log_to_stderr);
        #[cfg(feature = "postgres")]
        f.field("outbox", &self.outbox);
        f.finish()
    }
}

impl WorkerConfig {
    /// A config for the Redis at `redis_url` with the defaults of the command line.
    pub fn new(redis_url: impl Into<String>) -> WorkerConfig {
        WorkerConfig {
            redis_url: redis_url.into(),
            namespace: crate::door::DEFAULT_NAMESPACE.to_owned(),
            queues: QueueSelection::AllKnown,
            concurrency: 10,
            shutdown_timeout: Duration::from_secs(25),
            poll_interval: Duration::from_secs(1),
            dead_cap: crate::door::DeadCap::default(),
            finished_max_jobs: crate::door::DEFAULT_KEEP,
            retention: crate::door::DEFAULT_RETENTION,
            recovery_interval: crate::recovery::RECOVERY_INTERVAL,
            lease: crate::leases::DEFAULT_LEASE,
            worker_id: None,
            tls: gator_core::TlsFiles::default(),
            cluster: false,
            wait: None,
            metrics: false,
            scaling: gator_core::admin::ScalingPolicy::default(),
            max_payload: None,
            log_to_stderr: false,
            #[cfg(feature = "postgres")]
            outbox: None,
        }
    }
}

/// Checks a `--worker-id`: it becomes part of the process id `<worker id>:<nonce>`, so no
/// colons (a takeover matches ids by it), and no braces or spaces.
pub fn parse_worker_id(id: &str) -> Result<String, String> {
    let ok = !id.is_empty()
        && id.len() <= 100
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
    if ok {
        Ok(id.to_owned())
    } else {
        Err(format!(
            "invalid worker id {id:?}: use 1 to 100 characters from A-Z a-z 0-9 _ - . (no colons)"
        ))
    }
}

/// Parses a `--lease`: a duration of at least [`crate::leases::MIN_LEASE`].
pub fn parse_lease(text: &str) -> Result<Duration, String> {
    let lease = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    if lease < crate::leases::MIN_LEASE {
        return Err(format!(
            "a lease of {text} is too short: at least {:?}, so a renewal every quarter of it can outlast a slow round trip",
            crate::leases::MIN_LEASE
        ));
    }
    Ok(lease)
}

/// Parses `--scaling-target-latency`: a duration from 1 s to a day, into the policy of the
/// scaling gauges (at most [`gator_core::admin::scaling::DEFAULT_MAX_WORKERS`] suggested).
pub fn parse_scaling_target(text: &str) -> Result<gator_core::admin::ScalingPolicy, String> {
    let target = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    gator_core::admin::ScalingPolicy::new(target, gator_core::admin::scaling::DEFAULT_MAX_WORKERS)
        .map_err(|e| e.to_string())
}

/// `gator-worker`: runs the jobs linked into this binary.
#[derive(Parser)]
#[command(
    name = "gator-worker",
    version,
    about = "Runs Gator jobs from Redis",
    long_about = "Runs the #[job]s linked into this binary, taking them from Redis queues.\n\n\
        Stops on SIGINT or SIGTERM: it stops fetching, lets running jobs finish for up to \
        --shutdown-timeout, puts any still running back at the head of their queues, and exits 0.\n\n\
        The subcommands inspect and repair the fleet (its queues, sets, jobs and periodic jobs) \
        instead of running the worker. Every flag and variable: the book's page \
        docs/operate/worker-flags.md."
)]
pub struct Cli {
    /// Queues to work, in order: `critical,default` tries them strictly in that order;
    /// `high:3,default:1` shuffles them by weight on every fetch, so `high` is tried first three
    /// times as often as `default`. Without it, every known queue is worked, shuffled.
    #[arg(short, long, env = "GATOR_QUEUES", value_name = "QUEUE[:WEIGHT],...")]
    pub queues: Option<QueueSelection>,

    /// How many jobs run at the same time.
    #[arg(short, long, env = "GATOR_CONCURRENCY", default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,

    /// The Redis to take jobs from: `redis://host:port/db` (`rediss://` for TLS), a Redis
    /// Cluster as comma-separated node URLs, or a master found by its sentinels as
    /// `redis+sentinel://host:26379,host2:26379/SERVICE`.
    #[arg(long, global = true, env = "GATOR_REDIS_URL", default_value = gator_core::client::DEFAULT_REDIS_URL)]
    pub redis_url: String,

    /// A PEM file of the CA(s) that signed a `rediss://` server's certificate, instead of the
    /// system's roots.
    #[arg(long, global = true, env = "GATOR_REDIS_CA_CERT", value_name = "FILE")]
    pub redis_ca_cert: Option<std::path::PathBuf>,

    /// A PEM client certificate to present to a `rediss://` server (mutual TLS); needs
    /// --redis-client-key.
    #[arg(
        long,
        global = true,
        env = "GATOR_REDIS_CLIENT_CERT",
        value_name = "FILE",
        requires = "redis_client_key"
    )]
    pub redis_client_cert: Option<std::path::PathBuf>,

    /// The PEM private key of --redis-client-cert.
    #[arg(
        long,
        global = true,
        env = "GATOR_REDIS_CLIENT_KEY",
        value_name = "FILE",
        requires = "redis_client_cert"
    )]
    pub redis_client_key: Option<std::path::PathBuf>,

    /// Treat a single --redis-url as the seed of a Redis Cluster (several comma-separated URLs
    /// are a cluster without it).
    #[arg(long, global = true, env = "GATOR_REDIS_CLUSTER", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub redis_cluster: bool,

    /// After each enqueue, wait until this many replicas have it (`WAIT`), so that a job
    /// acknowledged survives a failover of its master; a dispatch they do not confirm in
    /// --wait-timeout fails. 0: do not wait (replication stays asynchronous).
    #[arg(long, global = true, env = "GATOR_WAIT_REPLICAS", default_value_t = 0)]
    pub wait_replicas: u32,

    /// How long a dispatch waits for --wait-replicas (e.g. `500ms`).
    #[arg(long, global = true, env = "GATOR_WAIT_TIMEOUT", default_value = "500ms", value_parser = humantime::parse_duration)]
    pub wait_timeout: Duration,

    /// Prefix of every Redis key; workers and producers must agree on it.
    #[arg(long, global = true, env = "GATOR_NAMESPACE", default_value = "gator")]
    pub namespace: String,

    /// How long running jobs may take to finish after SIGINT/SIGTERM (e.g. `25s`, `2m`).
    #[arg(long, default_value = "25s", value_parser = humantime::parse_duration)]
    pub shutdown_timeout: Duration,

    /// Average interval between passes that move due scheduled and retried jobs to their queues.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub poll_interval: Duration,

    /// The most jobs each queue's dead set keeps; the oldest are trimmed first.
    #[arg(long, default_value_t = 10_000)]
    pub dead_max_jobs: usize,

    /// The most finished jobs (done, cancelled, discarded) whose status and result each queue
    /// keeps; the oldest are trimmed first. They also expire after `--retention`.
    #[arg(long, env = "GATOR_FINISHED_MAX_JOBS", default_value_t = crate::door::DEFAULT_KEEP)]
    pub finished_max_jobs: usize,

    /// How long a job stays in the dead set before it is trimmed (e.g. `180days`, `4w`).
    #[arg(long, default_value = "180days", value_parser = humantime::parse_duration)]
    pub dead_max_age: Duration,

    /// How long a finished job's status and result are kept (`gator-worker job show`,
    /// `Client::status`, `Client::result`).
    #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
    pub retention: Duration,

    /// How long this process's lease on its queues lasts unless renewed (every quarter of it).
    /// When a worker dies, its in-flight jobs run again once its lease has expired.
    #[arg(long, env = "GATOR_LEASE", default_value = "20s", value_parser = parse_lease)]
    pub lease: Duration,

    /// A name unique among live workers that stays the same across restarts (a pod or
    /// container name): a worker restarted under it puts its predecessor's jobs back at once
    /// instead of waiting for the lease. Two live workers must never share one.
    #[arg(long, env = "GATOR_WORKER_ID", value_parser = parse_worker_id)]
    pub worker_id: Option<String>,

    /// Serves the worker's metrics to Prometheus at `http://ADDR/metrics` (e.g.
    /// `127.0.0.1:9091`): job counts, durations and waits by queue and job, queue depth and
    /// latency, limiter waits. The book's page "Metrics, autoscaling and history" lists them.
    #[arg(long, env = "GATOR_METRICS_BIND", value_name = "ADDR")]
    pub metrics_bind: Option<std::net::SocketAddr>,

    /// The latency (age of the oldest waiting job) the `gator_queue_suggested_workers` gauge
    /// of `--metrics-bind` aims at: from `1s` to `1day`.
    #[arg(long, env = "GATOR_SCALING_TARGET_LATENCY", value_name = "DURATION", default_value = "30s", value_parser = parse_scaling_target)]
    pub scaling_target_latency: gator_core::admin::ScalingPolicy,

    /// The largest job payload (its whole JSON document) this worker's client stores, and
    /// above which a job it fetches goes to the dead set unrun, with the reason: bytes or
    /// with a unit (`512KiB`, `1MiB`). Producers should use the same (`GATOR_MAX_PAYLOAD`).
    #[arg(long, global = true, env = "GATOR_MAX_PAYLOAD", value_name = "SIZE", default_value = "512KiB", value_parser = gator_core::payload::limit::parse)]
    pub max_payload: usize,

    /// The transactional outbox this worker relays (`--outbox`, `--outbox-batch`; the
    /// `postgres` feature).
    #[command(flatten)]
    pub outbox: crate::outbox::OutboxArgs,

    /// Instead of running the worker: inspect or repair a set (see `gator-worker dead --help`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands that run instead of the worker: the admin commands with the `cli` feature.
#[cfg(feature = "cli")]
pub type Command = crate::cli::AdminCommand;

/// The subcommands that run instead of the worker: none without the `cli` feature.
#[cfg(not(feature = "cli"))]
#[derive(Debug, clap::Subcommand)]
pub enum Command {}

impl fmt::Debug for Cli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Only what is safe to show: the URL may hold a password.
        f.debug_struct("Cli")
            .field("redis_url", &gator_core::endpoint::redact(&self.redis_url))
            .field("namespace", &self.namespace)
            .field("queues", &self.queues)
            .field("command", &self.command)
            .finish_non_exhaustive()
    }
}

impl Cli {
    /// The TLS files this command line names.
    pub fn tls(&self) -> gator_core::TlsFiles {
        gator_core::TlsFiles {
            ca_cert: self.redis_ca_cert.clone(),
            client_cert: self.redis_client_cert.clone(),
            client_key: self.redis_client_key.clone(),
        }
    }

    /// The worker config this command line asks for.
    pub fn into_config(self) -> WorkerConfig {
        let tls = self.tls();
        #[cfg(feature = "postgres")]
        let outbox = self.outbox.config();
        WorkerConfig {
            redis_url: self.redis_url,
            namespace: self.namespace,
            queues: self.queues.unwrap_or(QueueSelection::AllKnown),
            concurrency: usize::from(self.concurrency),
            shutdown_timeout: self.shutdown_timeout,
            poll_interval: self.poll_interval,
            dead_cap: crate::door::DeadCap {
                max_jobs: self.dead_max_jobs,
                max_age: self.dead_max_age,
            },
            retention: self.retention,
            finished_max_jobs: self.finished_max_jobs,
            recovery_interval: crate::recovery::RECOVERY_INTERVAL,
            lease: self.lease,
            worker_id: self.worker_id,
            tls,
            cluster: self.redis_cluster,
            wait: (self.wait_replicas > 0).then_some(gator_core::ReplicaWait {
                replicas: self.wait_replicas,
                timeout: self.wait_timeout,
            }),
            metrics: self.metrics_bind.is_some(),
            scaling: self.scaling_target_latency,
            max_payload: Some(self.max_payload),
            // `main` installs its own subscriber.
            log_to_stderr: false,
            #[cfg(feature = "postgres")]
            outbox,
        }
    }
}

#[cfg(test)]
#[path = "config_test.rs"]
mod tests;
