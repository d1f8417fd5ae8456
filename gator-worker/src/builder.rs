//! [`WorkerBuilder`]: a worker configured in code, to run inside an application (next to an
//! axum server, in one tokio runtime) or as the `gator-worker` binary, which builds one from
//! its command line.
//!
//! Building checks everything that can be checked before Redis is reached: the queue spec,
//! the job names, and that every `State<T>` a job takes was given. Nothing process-wide is
//! touched: no default client is set and no signal handler is installed unless asked for
//! ([`WorkerBuilder::install_default_client`], [`crate::Worker::run`]).

use crate::config::{QueueSelection, QueueSpecError, WorkerConfig};
use crate::launcher::Worker;
use crate::middleware::Middleware;
use gator_core::middleware::DispatchMiddleware;
use gator_core::{Client, Job, Registry, StateMap, TlsFiles};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Configures a [`Worker`]; made by [`Worker::builder`]. Every setting has the command line's
/// default.
///
/// ```no_run
/// use gator_worker::{CancellationToken, Worker};
///
/// #[derive(Clone)]
/// struct Mailer { from: String }
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let worker = Worker::builder()
///     .redis_url("redis://127.0.0.1:6380")
///     .queues("high:3,default:1")
///     .concurrency(20)
///     .state(Mailer { from: "shop@example.com".into() })
///     .build()?;
/// let stop = CancellationToken::new();
/// tokio::spawn(worker.run_until(stop.clone()));
/// // ... later, to shut down gracefully:
/// stop.cancel();
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a WorkerBuilder does nothing until it is built and run"]
pub struct WorkerBuilder {
    config: WorkerConfig,
    client: Option<Client>,
    namespace_set: bool,
    queues: Result<(), QueueSpecError>,
    states: StateMap,
    jobs: Option<Vec<String>>,
    install_default_client: bool,
    middleware: Middleware,
}

// Here rather than beside `Worker` (`launcher`): the builder makes a worker, so the launcher
// needs nothing of it.
impl Worker {
    /// A builder with the command line's defaults: `.redis_url(..)`, `.queues(..)`,
    /// `.state(..)`, then `.build()`.
    pub fn builder() -> WorkerBuilder {
        WorkerBuilder::new()
    }
}

/// Why a worker cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The `.queues(..)` spec is not valid.
    #[error("invalid queues: {0}")]
    Queues(#[from] QueueSpecError),
    /// `.concurrency(0)`.
    #[error("a worker needs a concurrency of at least 1")]
    Concurrency,
    /// A job the worker would run takes a `State<T>` the builder was not given.
    #[error(
        "job {job:?} ({defined_at}) takes `State<{type_name}>`, but this worker was not given one: \
         add `.state(value)` with a `{type_name}` to `Worker::builder()` (in a worker binary, \
         `gator_worker::main_with(|worker| worker.state(value))`), or leave the job out with `.jobs(..)`"
    )]
    MissingState {
        /// The job's wire name.
        job: &'static str,
        /// Where its fn is defined.
        defined_at: &'static str,
        /// The state type it takes.
        type_name: &'static str,
    },
    /// `.client(..)` and `.namespace(..)` disagree.
    #[error(
        "the client works under the namespace {client:?}, but the worker was given {asked:?}: set the namespace on the client's builder"
    )]
    Namespace {
        /// The client's namespace.
        client: String,
        /// The one given to the worker builder.
        asked: String,
    },
    /// Two linked jobs share a wire name, or `.jobs(..)` names one that is not linked.
    #[error(transparent)]
    Jobs(#[from] gator_core::Error),
}

impl WorkerBuilder {
    /// The builder for the command line's defaults; [`Worker::builder`] is the usual way in.
    pub fn new() -> WorkerBuilder {
        WorkerBuilder::from_config(WorkerConfig::new(gator_core::client::DEFAULT_REDIS_URL))
    }

    /// A builder that starts from `config` (what the command line parsed).
    pub fn from_config(config: WorkerConfig) -> WorkerBuilder {
        WorkerBuilder {
            config,
            client: None,
            namespace_set: false,
            queues: Ok(()),
            states: StateMap::default(),
            jobs: None,
            install_default_client: false,
            middleware: Middleware::default(),
        }
    }

    /// The Redis to work against (`redis://`, or `rediss://` for TLS); default
    /// `redis://127.0.0.1:6379`. Ignored if [`WorkerBuilder::client`] is given.
    pub fn redis_url(mut self, url: impl Into<String>) -> WorkerBuilder {
        self.config.redis_url = url.into();
        self
    }

    /// Treats a single `redis_url` as the seed of a Redis Cluster (several comma-separated
    /// URLs are a cluster without it).
    pub fn cluster(mut self, cluster: bool) -> WorkerBuilder {
        self.config.cluster = cluster;
        self
    }

    /// Makes every dispatch from this worker's jobs wait until `replicas` replicas have the
    /// job, for at most `timeout` (see [`gator_core::ClientBuilder::wait_for_replicas`]).
    /// Ignored if [`WorkerBuilder::client`] is given: build that client with it instead.
    pub fn wait_for_replicas(
        mut self,
        replicas: u32,
        timeout: std::time::Duration,
    ) -> WorkerBuilder {
        self.config.wait = Some(gator_core::ReplicaWait { replicas, timeout });
        self
    }

    /// Works through this client (and its namespace) instead of connecting to a URL: the app
    /// and its worker share one connection.
    pub fn client(mut self, client: Client) -> WorkerBuilder {
        self.client = Some(client);
        self
    }

    /// The queues to work, in the command line's syntax: `critical,default` (strict order) or
    /// `high:3,default:1` (weighted). Default: every known queue. An invalid spec fails
    /// [`WorkerBuilder::build`].
    pub fn queues(mut self, spec: &str) -> WorkerBuilder {
        match spec.parse::<QueueSelection>() {
            Ok(queues) => {
                self.config.queues = queues;
                self.queues = Ok(());
            }
            Err(e) => self.queues = Err(e),
        }
        self
    }

    /// How many jobs run at once (default 10).
    pub fn concurrency(mut self, concurrency: usize) -> WorkerBuilder {
        self.config.concurrency = concurrency;
        self
    }

    /// The key namespace (default `gator`); producers must use the same.
    pub fn namespace(mut self, namespace: impl Into<String>) -> WorkerBuilder {
        self.config.namespace = namespace.into();
        self.namespace_set = true;
        self
    }

    /// How long running jobs get to finish once the worker is told to stop (default 25 s).
    /// At that deadline their contexts are cancelled, and jobs still running are put back.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> WorkerBuilder {
        self.config.shutdown_timeout = timeout;
        self
    }

    /// Gives jobs that take `State<T>` this value (cloned for each run). Call it once per
    /// type; a second value of the same type replaces the first.
    pub fn state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> WorkerBuilder {
        self.states.insert(value);
        self
    }

    /// Runs only the jobs with these wire names (default: every `#[job]` linked in). Jobs of
    /// other names that reach its queues are retried, for a worker that has them.
    pub fn jobs<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> WorkerBuilder {
        self.jobs
            .get_or_insert_with(Vec::new)
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Adds the job type `J` to the jobs this worker runs, as [`WorkerBuilder::jobs`] does by
    /// name: `.job::<SendEmail>()`.
    pub fn job<J: Job>(self) -> WorkerBuilder {
        self.jobs([J::NAME])
    }

    /// Verifies a `rediss://` server against the CA(s) in this PEM file instead of the system
    /// roots (default: `GATOR_REDIS_CA_CERT`, if set).
    pub fn ca_cert(mut self, path: impl Into<PathBuf>) -> WorkerBuilder {
        self.config.tls.ca_cert = Some(path.into());
        self
    }

    /// Presents this PEM client certificate and key to a `rediss://` server (mutual TLS).
    pub fn client_cert(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> WorkerBuilder {
        self.config.tls.client_cert = Some(cert.into());
        self.config.tls.client_key = Some(key.into());
        self
    }

    /// Sets every TLS file at once.
    pub fn tls(mut self, tls: TlsFiles) -> WorkerBuilder {
        self.config.tls = tls;
        self
    }

    /// The largest payload its client stores, and above which a fetched job goes to the dead
    /// set unrun (default: `GATOR_MAX_PAYLOAD`, else 512 KiB). With [`WorkerBuilder::client`],
    /// that client's limit applies instead.
    pub fn max_payload(mut self, bytes: usize) -> WorkerBuilder {
        self.config.max_payload = Some(bytes);
        self
    }

    /// How long this process's lease on each queue lasts unless renewed (default 20 s): the
    /// longest a crashed worker's jobs wait before they run again.
    pub fn lease(mut self, lease: Duration) -> WorkerBuilder {
        self.config.lease = lease;
        self
    }

    /// A name unique among live workers and stable across restarts (see `--worker-id`).
    pub fn worker_id(mut self, id: impl Into<String>) -> WorkerBuilder {
        self.config.worker_id = Some(id.into());
        self
    }

    /// Emits the `metrics` facade's series (listed in [`crate::observer`]) to whatever
    /// recorder the application installed (off by default: a job then pays nothing for them).
    /// `gator-worker --metrics-bind ADDR` turns them on with a Prometheus exporter.
    pub fn metrics(mut self, on: bool) -> WorkerBuilder {
        self.config.metrics = on;
        self
    }

    /// The average interval between passes that move due scheduled and retry jobs (default
    /// 1 s).
    pub fn poll_interval(mut self, interval: Duration) -> WorkerBuilder {
        self.config.poll_interval = interval;
        self
    }

    /// Wraps each job run in `layer`: a [`tower::Layer`] over [`JobService`], or
    /// [`crate::middleware::from_fn`]. The first layer added is the outermost: it runs first
    /// before the job and last after it (see [`crate::middleware`]).
    ///
    /// [`JobService`]: crate::middleware::JobService
    pub fn layer<L>(mut self, layer: L) -> WorkerBuilder
    where
        L: tower::Layer<crate::middleware::JobService> + Send + Sync + 'static,
        L::Service: tower::Service<
                gator_core::middleware::JobRun,
                Response = Option<String>,
                Error = gator_core::JobError,
            > + Clone
            + Send
            + Sync
            + 'static,
        <L::Service as tower::Service<gator_core::middleware::JobRun>>::Future: Send + 'static,
    {
        self.middleware.layers.push(layer);
        self
    }

    /// Adds client middleware to the client the worker connects (the one jobs dispatch other
    /// jobs through, with [`WorkerBuilder::install_default_client`]); a client given with
    /// [`WorkerBuilder::client`] keeps its own. See [`gator_core::middleware`].
    pub fn dispatch_middleware(mut self, middleware: impl DispatchMiddleware) -> WorkerBuilder {
        self.middleware.dispatch.push(Arc::new(middleware));
        self
    }

    /// Makes the worker's client the process-wide default once connected, so `Job::dispatch`
    /// inside jobs goes to the same Redis. Off unless asked for: an app that sets its own
    /// default keeps it. The `gator-worker` binary turns it on.
    pub fn install_default_client(mut self) -> WorkerBuilder {
        self.install_default_client = true;
        self
    }

    /// Logs to stderr as the `gator-worker` binary does (`RUST_LOG`, else `info`), for an
    /// application that installs no `tracing` subscriber of its own: without one, a worker's
    /// logs (failed jobs among them) go nowhere, and it says so once on stderr when it starts.
    /// An application's own subscriber, installed before the worker runs, wins.
    pub fn log_to_stderr(mut self) -> WorkerBuilder {
        self.config.log_to_stderr = true;
        self
    }

    /// Checks the settings and the jobs, and returns the worker, which connects when run.
    /// Fails on an invalid queue spec, a concurrency of 0, an unknown job name in `.jobs(..)`,
    /// two jobs with one wire name, or a `State<T>` a job takes that was not given.
    pub fn build(self) -> Result<Worker, BuildError> {
        self.queues?;
        if self.config.concurrency == 0 {
            return Err(BuildError::Concurrency);
        }
        if let Some(client) = &self.client {
            let namespace = client.keys().namespace();
            if self.namespace_set && namespace != self.config.namespace {
                return Err(BuildError::Namespace {
                    client: namespace.to_owned(),
                    asked: self.config.namespace,
                });
            }
        }
        let mut registry = Registry::from_inventory()?;
        // A bad `#[job(cron = ...)]` expression or zone stops the worker here, with its reason.
        gator_core::cron::declared()?;
        if let Some(names) = &self.jobs {
            registry = registry.only(names)?;
        }
        for registration in registry.registrations() {
            if let Some(need) = registration
                .states
                .iter()
                .find(|need| !self.states.provides(need))
            {
                return Err(BuildError::MissingState {
                    job: registration.name,
                    defined_at: registration.defined_at,
                    type_name: need.type_name(),
                });
            }
        }
        Ok(Worker::from_parts(
            self.config,
            self.client,
            Arc::new(registry),
            self.states,
            self.install_default_client,
            self.middleware,
        ))
    }
}

impl Default for WorkerBuilder {
    fn default() -> WorkerBuilder {
        WorkerBuilder::new()
    }
}
