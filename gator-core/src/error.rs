//! The one error type of gator-core: every fallible public fn returns [`Result`].

/// Everything that can go wrong when talking to Gator's Redis data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Redis refused a command, or could not be reached in time.
    #[error("redis error: {}", redis_text(.0))]
    Redis(#[from] redis::RedisError),
    /// A queue whose keys hold what Gator did not write there (a key of the wrong type,
    /// written by hand or by another tool): nothing was stored.
    #[error(
        "queue {queue:?} is broken: {reason}; a key of it holds data Gator did not write (see `gator-worker queues`, and delete or repair the key with redis-cli)"
    )]
    BrokenQueue {
        /// The queue.
        queue: String,
        /// What Redis said, without script details.
        reason: String,
    },
    /// A global key (not of one queue: the known-queues set, the job catalogue, the cron index,
    /// the replies' keys, ...) holds what Gator did not write there: what needs it is refused,
    /// and reads of it answer as empty (`crate::store::broken`).
    #[error(
        "key {key} is broken: {reason}; it holds data Gator did not write (delete or repair it with redis-cli)"
    )]
    BrokenKey {
        /// The key.
        key: String,
        /// What is wrong with it, without script details.
        reason: String,
    },
    /// Redis could not be reached, or refused the connection (a TLS certificate it does not
    /// accept, or one that does not verify, a wrong password).
    #[error("could not connect to Redis at {url}: {}", connect_reason(source))]
    Connect {
        /// The URL, its password redacted.
        url: String,
        /// What went wrong.
        source: redis::RedisError,
    },
    /// A Redis URL that cannot be parsed.
    #[error("invalid Redis URL {url}: {reason}")]
    InvalidUrl {
        /// The URL, its password redacted.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// TLS could not be set up: a certificate file that cannot be read or parsed, or TLS files
    /// given for a URL that does not use TLS.
    #[error("TLS: {reason}")]
    Tls {
        /// What is wrong.
        reason: String,
    },
    /// The job's arguments, or a payload, could not be turned into JSON or back.
    #[error("json error: {0}")]
    Json(#[from] serde_json::Error),
    /// A queue name that Gator cannot use as a Redis hash tag or in a link
    /// ([`gator_rules::queue_name`]).
    #[error(
        "invalid queue name {name:?}: it {reason}; use 1 to 128 characters from A-Z a-z 0-9 _ - . (no braces, colons or spaces; not . or ..)"
    )]
    InvalidQueueName {
        /// The name as given, cut to 100 characters.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A setting read from the environment that does not parse.
    #[error("invalid {name}={value:?}: expected {expected}")]
    InvalidSetting {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it should look like.
        expected: &'static str,
    },
    /// The enqueue reached the master, but fewer replicas than asked confirmed it in time
    /// (see `replication`): if the master fails now, it may be lost; sent again, it may run twice.
    #[error(
        "the job reached the master, but only {confirmed} of {wanted} replicas confirmed it within {timeout:?}: it may be lost if the master fails now (dispatching it again may run it twice)"
    )]
    NotReplicated {
        /// Replicas that confirmed.
        confirmed: u32,
        /// Replicas asked for.
        wanted: u32,
        /// How long the dispatch waited.
        timeout: std::time::Duration,
    },
    /// A shard count outside 1..=max.
    #[error("invalid shard count {count}: a queue has 1 (not sharded) to {max} shards")]
    InvalidShardCount {
        /// The count asked for.
        count: u32,
        /// The most allowed.
        max: u32,
    },
    /// A namespace that would break the key layout.
    #[error(
        "invalid namespace {name:?}: use 1 to 64 characters from A-Z a-z 0-9 _ - . : (no braces or spaces)"
    )]
    InvalidNamespace {
        /// The namespace as given.
        name: String,
    },
    /// Two `#[job]`s in one binary claim the same wire name.
    #[error(
        "two jobs are registered with the wire name {name:?}: {first} and {second}; give one of them `#[job(name = \"...\")]`"
    )]
    DuplicateJobName {
        /// The wire name both use.
        name: String,
        /// Where the first one is defined (`module::fn at file:line`).
        first: String,
        /// Where the second one is defined.
        second: String,
    },
    /// A worker was asked to run a job that no `#[job]` in the binary has.
    #[error("no job named {name:?} is linked into this binary (known: {known})")]
    UnknownJob {
        /// The name asked for.
        name: String,
        /// The wire names there are, comma-separated.
        known: String,
    },
    /// A job dispatched by wire name (`Client::dispatch_by_name`, the HTTP API) that no live
    /// or recent worker published in the job catalogue; nothing was stored.
    #[error(
        "no worker runs a job named {name:?}: none published it in the job catalogue lately \
         (known: {known}); check the name, or force the dispatch to store it anyway"
    )]
    NotInCatalogue {
        /// The name as given, cut to 100 characters.
        name: String,
        /// The names the catalogue knows, comma-separated (the first 50).
        known: String,
    },
    /// A job name given by wire name (`Client::dispatch_by_name`) that cannot be one
    /// ([`gator_rules::job_name`]): empty, over 256 bytes, or with control, invisible or
    /// bidirectional characters.
    #[error(
        "invalid job name {name:?}: it {reason}; a job's wire name is 1 to 256 bytes with no control, invisible or bidirectional characters"
    )]
    InvalidJobName {
        /// The name as given, cut to 100 characters.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A job whose payload is larger than the client's limit
    /// (`ClientBuilder::max_payload`); nothing was stored.
    #[error(
        "the payload of job {job:?} is {bytes} bytes, over the limit of {max}: keep large data elsewhere (object storage, a database) and pass its key, or raise the limit (ClientBuilder::max_payload, GATOR_MAX_PAYLOAD)"
    )]
    PayloadTooLarge {
        /// The job's wire name.
        job: String,
        /// The payload's size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A job's arguments stored aside (`payload::aside`) whose side key cannot be read.
    #[error("the arguments of job {jid} stored aside cannot be read: {reason}")]
    Aside {
        /// The job's id.
        jid: String,
        /// Why.
        reason: String,
    },
    /// Arguments given as JSON (`Client::dispatch_by_name`) that are not a job's.
    #[error("invalid args: {reason}")]
    InvalidArgs {
        /// Why.
        reason: String,
    },
    /// A chain with no step was dispatched.
    #[error("a chain needs at least one step: add them with `.then(Job::call(..))`")]
    EmptyChain,
    /// `Client::cancel` found job `jid` in a new state each of the many times it
    /// tried to remove it.
    #[error("job {jid} kept moving while it was being cancelled; try again")]
    CancelRaced {
        /// The job's jid.
        jid: String,
    },
    /// A correlation key that is empty, longer than 512 bytes, or holds a character that does
    /// not show as itself ([`gator_rules::visible_name`]).
    #[error("invalid reply key {key:?}: it {reason}")]
    InvalidReplyKey {
        /// The key (its first 64 characters).
        key: String,
        /// What is wrong with it, completing "it ...".
        reason: String,
    },
    /// In inline testing mode (`testing::inline`), the job run at its dispatch
    /// failed.
    #[error("job {job} failed when run inline: {reason}")]
    InlineJobFailed {
        /// The job's wire name.
        job: String,
        /// Why.
        reason: String,
    },
    /// Client middleware (`middleware::DispatchMiddleware`) refused to dispatch a job:
    /// nothing was stored.
    #[error("dispatch of job {job} refused by middleware: {reason}")]
    Rejected {
        /// The job's wire name.
        job: String,
        /// Why, as the middleware said.
        reason: String,
    },
    /// A workflow with no step was dispatched.
    #[error("a workflow needs at least one step: add them with `.then(Job::call(..))`")]
    EmptyWorkflow,
    /// A string that is not a workflow id (`<uuid>@<home queue>`, as dispatch returns it).
    #[error("{id:?} is not a workflow id (`<uuid>@<queue>`)")]
    InvalidWorkflowId {
        /// The string given.
        id: String,
    },
    /// Workflow `id` is unknown (never dispatched, or finished longer ago than its retention).
    #[error("no workflow {id}")]
    UnknownWorkflow {
        /// The workflow id.
        id: String,
    },
    /// Unique options that cannot be used (a zero TTL or debounce delay, an empty key).
    #[error("invalid unique options: {reason}")]
    InvalidUnique {
        /// Why they were refused.
        reason: String,
    },
    /// A time that cannot be used to schedule a job.
    #[error("invalid schedule time: {reason}")]
    InvalidTime {
        /// Why the time was refused.
        reason: String,
    },
    /// `Client::wait_for` gave up before the job was done or dead.
    #[error("job {jid} was still {state} after waiting {waited:?}")]
    WaitTimedOut {
        /// The job waited for.
        jid: String,
        /// Its state when the wait ended.
        state: &'static str,
        /// How long it was waited for.
        waited: std::time::Duration,
    },
    /// A periodic entry that cannot be used: a bad cron expression, time zone or name (see
    /// `cron`).
    #[error("invalid periodic job {name:?}: {reason}")]
    InvalidCron {
        /// The entry's name.
        name: String,
        /// Why it was refused.
        reason: String,
    },
    /// No periodic entry of that name is stored in Redis.
    #[error("no periodic job named {name:?}; `gator-worker cron list` shows them")]
    UnknownPeriodic {
        /// The name asked for.
        name: String,
    },
    /// A flow option or queue setting that cannot be used (see `flow`).
    #[error("invalid flow control setting: {reason}")]
    InvalidFlow {
        /// Why it was refused.
        reason: String,
    },
    /// A progress report that cannot be recorded (see `Context::progress`).
    #[error("invalid progress {fraction}: expected a fraction from 0 to 1")]
    InvalidProgress {
        /// The fraction given.
        fraction: f64,
    },
}

/// `Result` with gator-core's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A name to quote in an error: its first 100 bytes and a note if it was longer, so that a
/// megabyte sent as a name is not repeated into every log line and answer about it.
pub(crate) fn cut_name(name: &str) -> String {
    gator_rules::cut(name, 100).into_owned()
}

impl Error {
    /// Whether Redis refused a command on a queue's list key for its type: the queue is under
    /// flow control (`flow`) and its list key holds the `controlled` marker.
    pub fn is_controlled_queue(&self) -> bool {
        matches!(self, Error::Redis(e) if is_wrong_type(e))
    }

    /// Whether Redis refused a read or a write for what it found in a key: a key of the wrong
    /// type, or a value that is not what Gator writes there. Such an error concerns the keys
    /// of one queue, not Redis as a whole.
    pub fn is_broken_data(&self) -> bool {
        match self {
            Error::BrokenQueue { .. } | Error::BrokenKey { .. } => true,
            Error::Redis(e) => {
                is_wrong_type(e) || e.kind() == redis::ErrorKind::UnexpectedReturnType
            }
            _ => false,
        }
    }

    /// This error, said of `queue` if it is [broken data](Error::is_broken_data): a clear
    /// [`Error::BrokenQueue`] instead of Redis's words about a script.
    pub fn of_queue(self, queue: &str) -> Error {
        match self {
            Error::Redis(ref e) if self.is_broken_data() => Error::BrokenQueue {
                queue: queue.to_owned(),
                reason: redis_text(e),
            },
            other => other,
        }
    }

    /// Whether this is Redis being away or unreachable (a lost connection, a timeout, a refused
    /// connection), not a refusal of what was asked.
    pub fn is_connection(&self) -> bool {
        match self {
            // A refused password or a certificate that does not verify will be refused again:
            // waiting for it would look like an outage that never ends.
            Error::Connect { source, .. } => !is_refusal(source),
            Error::Redis(e) => {
                e.is_io_error()
                    || e.is_timeout()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
            }
            _ => false,
        }
    }
}

/// Whether connecting failed because the server refused who we are (a wrong password or user,
/// `WRONGPASS`/`NOAUTH`) or its certificate did not verify: no retry will change that.
fn is_refusal(error: &redis::RedisError) -> bool {
    error.kind() == redis::ErrorKind::AuthenticationFailed
        || has_server_code(error, "WRONGPASS")
        || has_server_code(error, "NOAUTH")
        || is_unverified_certificate(&error.to_string())
}

/// Whether a connection error's text says the server's certificate did not verify (rustls
/// names it; redis-rs has no kind for it).
fn is_unverified_certificate(text: &str) -> bool {
    text.contains("certificate") || text.contains("UnknownIssuer")
}

/// Whether Redis refused a command (or one in a `MULTI`) for a key of the wrong type: on a
/// queue's list key, the queue is under flow control and the key holds its marker.
pub fn is_wrong_type(error: &redis::RedisError) -> bool {
    has_server_code(error, "WRONGTYPE")
}

/// Whether Redis answered `code` (`WRONGTYPE`, `OOM`), to a command or to one in a `MULTI`
/// (which comes back as a pipeline error holding the server's errors).
pub fn has_server_code(error: &redis::RedisError, code: &str) -> bool {
    error.code() == Some(code)
        || error
            .clone()
            .into_server_errors()
            .is_some_and(|errors| errors.iter().any(|(_, e)| e.code() == code))
}

/// What Redis said, without the name and line of the script that said it (`script: <sha>, on
/// @user_script:12.`): a user cannot act on those.
pub(crate) fn redis_text(error: &redis::RedisError) -> String {
    let text = error.to_string();
    match text.find(" script: ") {
        Some(at) => text[..at].trim_end_matches([',', ' ']).to_owned(),
        None => text,
    }
}

/// A pointer to the likely fix when a TLS handshake failed on the server's certificate.
fn connect_reason(error: &redis::RedisError) -> String {
    let text = error.to_string();
    if is_unverified_certificate(&text) {
        format!(
            "{text} (the server's certificate did not verify: give the CA that signed it with --redis-ca-cert or GATOR_REDIS_CA_CERT, or check the host name in the URL)"
        )
    } else if error.kind() == redis::ErrorKind::Parse || text.contains("Parse error") {
        // A reply Redis would never send (an HTTP server's `HTTP/1.1 400`, a TLS handshake):
        // the parser's `Unexpected '84'` would say nothing to whoever reads it.
        "the server there did not answer as Redis: is another service on that port, or is it a \
         TLS port (write rediss://)?"
            .to_owned()
    } else {
        text
    }
}
