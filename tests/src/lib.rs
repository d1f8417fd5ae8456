//! Private redis-server harness for Gator's integration tests.
//!
//! Every test starts its own `redis-server` on a random free port with its own
//! temporary directory, because:
//!
//! * tests run in parallel and must not see each other's queues, locks or
//!   leftover keys, so sharing one server (or calling `FLUSHALL`) is not safe;
//! * a developer's own Redis on 6379 may hold real data, so the harness never
//!   uses that port and never relies on an already-running server;
//! * chaos tests stop, pause, kill and restart the server, which would break
//!   every other test if the server were shared.
//!
//! The harness panics (never skips) when `redis-server` is missing, so a test
//! run cannot silently pass without exercising Redis.
//!
//! **Both modes.** With `GATOR_TEST_REDIS=cluster` in the environment, [`RedisServer::start`]
//! starts a 3-master Redis Cluster instead of one server, and the same tests run against it
//! (`scripts/test-cluster`). A test that stops, pauses or restarts Redis, or talks to it without
//! Gator's client, uses [`RedisServer::start_single`] (or `start_with`): one server in both
//! modes. Calling a single-server method on a cluster panics and says so.
//!
//! **Any server.** `GATOR_TEST_SERVER` names the server binary every server, cluster node and
//! sentinel is started from (default `redis-server` on PATH): `scripts/test-valkey` runs the
//! same suites with Valkey 9's `valkey-server` (installed by `scripts/ensure-valkey`).
//! `redis-cli` talks to either.

pub mod chaos;
mod cluster;
pub mod failover;
pub mod metrics;
pub mod postgres;
mod proxy;
mod sentinel;
mod tls;
mod worker;
pub use cluster::RedisCluster;
pub use postgres::PostgresServer;
pub use proxy::SilentProxy;
pub use sentinel::{RedisSentinel, SENTINEL_SERVICE};
pub use tls::{TLS_PASSWORD, TestCerts, TlsRedis};
pub use worker::{
    TestWorker, WorkerCommand, WorkerProcess, catalogued, client, libfaketime,
    pid_namespaces_available, run_cli, set_flow, spawn_worker_process, spawn_worker_process_with,
    terminate,
};

use std::future::Future;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

const NOT_FOUND: &str = "redis-server was not found on PATH (or the binary GATOR_TEST_SERVER \
    names does not exist). Install it with `sudo apt-get install -y redis-server` \
    (Debian/Ubuntu) or `brew install redis` (macOS), or run `scripts/test`, which installs it \
    for you (`scripts/ensure-valkey` installs Valkey).";

/// The server binary the harness starts: `GATOR_TEST_SERVER`, else `redis-server` on PATH.
pub fn server_binary() -> String {
    std::env::var("GATOR_TEST_SERVER")
        .ok()
        .filter(|path| !path.trim().is_empty())
        .unwrap_or_else(|| "redis-server".to_owned())
}

/// Whether the server binary is Valkey (its `--version` says `Valkey server`).
pub fn server_is_valkey() -> bool {
    Command::new(server_binary())
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).starts_with("Valkey"))
}
const START_DEADLINE: Duration = Duration::from_secs(10);
const LOG_TAIL_LINES: usize = 60;

/// Options for [`RedisServer::start_with`].
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Turn on the append-only file (`appendfsync everysec`, or `always` with
    /// `fsync_always`) so data survives [`RedisServer::restart`].
    pub appendonly: bool,
    /// With `appendonly`, fsync the AOF before every reply (`appendfsync always`), so even a
    /// SIGKILL of the server ([`RedisServer::kill`]) loses no acknowledged write.
    pub fsync_always: bool,
    /// More `redis-server` arguments (a TLS port and its files: see [`TlsRedis`]).
    pub extra_args: Vec<String>,
}

/// The environment variable that makes [`RedisServer::start`] start a cluster.
pub const TEST_REDIS_ENV: &str = "GATOR_TEST_REDIS";

/// Whether this test run targets a Redis Cluster (`GATOR_TEST_REDIS=cluster`).
pub fn cluster_mode() -> bool {
    std::env::var(TEST_REDIS_ENV).is_ok_and(|v| v == "cluster")
}

/// A `redis-server` child process owned by one test, or (in cluster mode) a 3-master cluster;
/// killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    /// In cluster mode: the cluster, and `child` is none.
    cluster: Option<RedisCluster>,
    child: Option<Child>,
    pid: u32,
    port: u16,
    opts: ServerOptions,
    // Declared last so the directory outlives the process that writes into it.
    dir: TempDir,
}

/// Outcome of one launch attempt; fatal problems panic instead.
enum Launch {
    Up(Child),
    PortBusy,
}

impl RedisServer {
    /// Starts a server with default options (no persistence).
    ///
    /// # Panics
    /// If `redis-server` is not on PATH or does not answer `PING` in time.
    pub fn start() -> RedisServer {
        if cluster_mode() {
            return RedisServer {
                cluster: Some(RedisCluster::start(3, 0)),
                child: None,
                pid: 0,
                port: 0,
                opts: ServerOptions::default(),
                dir: tempfile::Builder::new()
                    .prefix("gator-redis-")
                    .tempdir()
                    .expect("creating a temp dir"),
            };
        }
        Self::start_with(ServerOptions::default())
    }

    /// Starts one server, in either mode: for a test that stops, pauses or restarts Redis, or
    /// reads it without Gator's client.
    pub fn start_single() -> RedisServer {
        Self::start_with(ServerOptions::default())
    }

    /// Whether this is a cluster ([`cluster_mode`]).
    pub fn is_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// Panics with the reason if this is a cluster: `what` needs one server.
    fn single(&self, what: &str) {
        assert!(
            self.cluster.is_none(),
            "{what} needs a single redis-server: start it with RedisServer::start_single()"
        );
    }

    /// Starts a server with `opts`, retrying on a new port if the chosen one
    /// was taken between picking it and the server binding it.
    ///
    /// # Panics
    /// If `redis-server` is not on PATH or does not come up after 5 attempts.
    pub fn start_with(opts: ServerOptions) -> RedisServer {
        let dir = tempfile::Builder::new()
            .prefix("gator-redis-")
            .tempdir()
            .expect("creating a temp dir for redis-server");
        for _ in 0..5 {
            let port = free_port();
            if let Launch::Up(child) = launch(dir.path(), port, &opts) {
                let pid = child.id();
                return RedisServer {
                    cluster: None,
                    child: Some(child),
                    pid,
                    port,
                    opts,
                    dir,
                };
            }
        }
        panic!(
            "redis-server could not bind a free port after 5 attempts; log:\n{}",
            log_tail(dir.path())
        );
    }

    /// Connection URL, `redis://127.0.0.1:PORT/` (a cluster: its nodes' URLs, comma-separated).
    pub fn url(&self) -> String {
        match &self.cluster {
            Some(cluster) => cluster.url(),
            None => format!("redis://127.0.0.1:{}/", self.port),
        }
    }

    /// The TCP port; stays the same across [`restart`](Self::restart).
    pub fn port(&self) -> u16 {
        self.single("port()");
        self.port
    }

    /// The port of the server that holds `key`: the one server, or on a cluster the master
    /// of `key`'s slot (for `redis-cli -p` commands that follow no redirect, as `MONITOR`).
    pub fn port_of(&self, key: &str) -> u16 {
        match &self.cluster {
            Some(cluster) => cluster.master_of(key),
            None => self.port,
        }
    }

    /// Process id of the current (or most recent) server process.
    pub fn pid(&self) -> u32 {
        self.single("pid()");
        self.pid
    }

    /// Gracefully stops the server: SIGTERM (so Redis flushes the AOF), up to
    /// 5 s for it to exit, then SIGKILL. No-op if already stopped.
    pub fn stop(&mut self) {
        self.single("stop()");
        let Some(mut child) = self.child.take() else {
            return;
        };
        signal("-TERM", self.pid);
        // A paused server would never handle SIGTERM; the TERM stays pending
        // and is delivered as soon as CONT resumes it.
        signal("-CONT", self.pid);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill(); // Err only means it exited in the meantime.
        let _ = child.wait();
    }

    /// Stops the server and starts it again on the same port and directory,
    /// so an AOF-enabled server reloads its data.
    ///
    /// # Panics
    /// If the port stays busy for 5 s or the server does not come back.
    pub fn restart(&mut self) {
        self.single("restart()");
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Launch::Up(child) = launch(self.dir.path(), self.port, &self.opts) {
                self.pid = child.id();
                self.child = Some(child);
                return;
            }
            if Instant::now() >= deadline {
                panic!(
                    "port {} stayed busy; redis-server could not restart",
                    self.port
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Freezes the server with SIGSTOP: connections stay open but nothing is
    /// answered, which simulates a hung Redis.
    pub fn pause(&self) {
        self.single("pause()");
        signal("-STOP", self.pid);
    }

    /// Resumes a server frozen by [`pause`](Self::pause) (SIGCONT).
    pub fn resume(&self) {
        self.single("resume()");
        signal("-CONT", self.pid);
    }

    /// Kills the server with SIGKILL (no AOF flush), simulating a crash.
    pub fn kill(&mut self) {
        self.single("kill()");
        self.kill_child();
    }

    fn kill_child(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill(); // Err only means it already exited.
            let _ = child.wait();
        }
    }

    /// A connection to this server or cluster for raw commands (Gator's own, which sends each
    /// command to the node of its key on a cluster).
    ///
    /// # Panics
    /// If the connection cannot be made.
    pub async fn client(&self) -> gator_core::Connection {
        gator_core::Client::connect(&self.url())
            .await
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", self.url()))
            .connection()
    }

    /// Every member of the sorted set `key`, lowest score first, parsed as JSON: how tests
    /// read Gator's scheduled, retry and dead sets.
    ///
    /// # Panics
    /// If Redis cannot be reached or a member is not JSON.
    pub async fn zset_json(&self, key: &str) -> Vec<serde_json::Value> {
        if self.is_cluster() {
            let out = self.cli(&["ZRANGE", key, "0", "-1"]);
            return out
                .lines()
                .filter(|m| !m.is_empty())
                .map(|m| {
                    serde_json::from_str(m)
                        .unwrap_or_else(|e| panic!("a member of {key} is not JSON ({e}): {m}"))
                })
                .collect();
        }
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .query_async(&mut self.client().await)
            .await
            .unwrap_or_else(|e| panic!("ZRANGE {key}: {e}"));
        members
            .iter()
            .map(|m| {
                serde_json::from_str(m)
                    .unwrap_or_else(|e| panic!("a member of {key} is not JSON ({e}): {m}"))
            })
            .collect()
    }

    /// Runs `redis-cli -p PORT <args>` and returns its trimmed stdout
    /// (nil prints as an empty string).
    ///
    /// # Panics
    /// If `redis-cli` cannot be run.
    ///
    /// On a cluster, the command goes to the node of its key (`redis-cli -c`), and `KEYS`,
    /// `DBSIZE` and `FLUSHALL` go to every master, their outputs joined (sums for `DBSIZE`).
    pub fn cli(&self, args: &[&str]) -> String {
        if let Some(cluster) = &self.cluster {
            let every_node = args.first().is_some_and(|c| {
                ["KEYS", "DBSIZE", "FLUSHALL"].contains(&c.to_uppercase().as_str())
            });
            if !every_node {
                return cluster.cli(args);
            }
            let outs: Vec<String> = cluster
                .masters()
                .into_iter()
                .map(|port| cluster::cli(port, args))
                .filter(|out| !out.is_empty())
                .collect();
            if args[0].eq_ignore_ascii_case("DBSIZE") {
                return outs
                    .iter()
                    .map(|n| n.parse::<u64>().unwrap_or(0))
                    .sum::<u64>()
                    .to_string();
            }
            if args[0].eq_ignore_ascii_case("FLUSHALL") {
                return "OK".to_owned();
            }
            return outs.join("\n");
        }
        let out = Command::new("redis-cli")
            .arg("-p")
            .arg(self.port.to_string())
            .args(args)
            .output()
            .expect("running redis-cli (installed together with redis-server)");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "---- redis-server :{} log (last {LOG_TAIL_LINES} lines) ----\n{}\n---- end of redis-server :{} log ----",
                self.port,
                log_tail(self.dir.path()),
                self.port
            );
        }
        // Resume first so a paused server cannot linger; SIGKILL works either way.
        if self.child.is_some() {
            signal("-CONT", self.pid);
        }
        self.kill_child();
    }
}

/// What the jobs of one test binary record as they run, each line starting with a tag (the
/// test's own), so that tests running in parallel in that binary read only their own lines.
#[derive(Debug, Default)]
pub struct Notes(std::sync::Mutex<Vec<String>>);

impl Notes {
    /// An empty record, for a `static`.
    pub const fn new() -> Notes {
        Notes(std::sync::Mutex::new(Vec::new()))
    }

    /// Records `line` (`"<tag> ..."`).
    pub fn push(&self, line: impl Into<String>) {
        self.lines().push(line.into());
    }

    /// The lines tagged `tag` (those starting with `"<tag> "`), in the order they came.
    pub fn tagged(&self, tag: &str) -> Vec<String> {
        let prefix = format!("{tag} ");
        self.lines()
            .iter()
            .filter(|line| line.starts_with(&prefix))
            .cloned()
            .collect()
    }

    fn lines(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        // A poisoned lock only means a test panicked while recording; the lines are whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Polls `f` every 20 ms until it returns true.
///
/// # Panics
/// With "timed out after {deadline:?} waiting for {what}" if it never does.
pub async fn wait_until<F, Fut>(what: &str, deadline: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let end = tokio::time::Instant::now() + deadline;
    loop {
        if f().await {
            return;
        }
        if tokio::time::Instant::now() >= end {
            panic!("timed out after {deadline:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A free TCP port on 127.0.0.1 (never 6379), for a server a test starts.
pub fn free_port() -> u16 {
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding 127.0.0.1:0");
        let port = listener
            .local_addr()
            .expect("bound listener has an address")
            .port();
        if port != 6379 {
            return port;
        }
    }
}

fn log_path(dir: &Path) -> PathBuf {
    dir.join("redis.log")
}

fn log_tail(dir: &Path) -> String {
    let log = std::fs::read(log_path(dir)).unwrap_or_default();
    let log = String::from_utf8_lossy(&log);
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Sends `sig` (e.g. `"-TERM"`) to process `pid` with `kill`; whether it was delivered. Not
/// delivered means the process is already gone, which most callers tolerate.
pub fn signal(sig: &str, pid: u32) -> bool {
    Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Spawns redis-server on `port` and waits until *it* (not some other process
/// that grabbed the port) answers PING.
fn launch(dir: &Path, port: u16, opts: &ServerOptions) -> Launch {
    // The log is appended to across restarts; only this launch's part counts.
    let log_start = std::fs::metadata(log_path(dir)).map_or(0, |m| m.len() as usize);
    let mut cmd = Command::new(server_binary());
    cmd.arg("--port").arg(port.to_string());
    cmd.args([
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--daemonize",
        "no",
        "--protected-mode",
        "no",
    ]);
    cmd.arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(log_path(dir));
    cmd.args(["--appendonly", if opts.appendonly { "yes" } else { "no" }]);
    cmd.args(&opts.extra_args);
    if opts.appendonly {
        let fsync = if opts.fsync_always {
            "always"
        } else {
            "everysec"
        };
        cmd.args(["--appendfsync", fsync]);
    }
    let mut child = match cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == ErrorKind::NotFound => panic!("{NOT_FOUND}"),
        Err(e) => panic!("spawning redis-server: {e}"),
    };
    let deadline = Instant::now() + START_DEADLINE;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read(log_path(dir)).unwrap_or_default();
            let new = String::from_utf8_lossy(log.get(log_start..).unwrap_or_default());
            if new.contains("Address already in use") {
                return Launch::PortBusy;
            }
            panic!(
                "redis-server on port {port} exited early ({status}); log:\n{}",
                log_tail(dir)
            );
        }
        match server_pid(port) {
            Some(pid) if pid == child.id() => return Launch::Up(child),
            Some(_) => {
                // Someone else's server owns the port; ours will fail to bind.
                let _ = child.kill();
                let _ = child.wait();
                return Launch::PortBusy;
            }
            None => {}
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "redis-server on port {port} did not answer PING within {START_DEADLINE:?}; log:\n{}",
                log_tail(dir)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends raw `PING` + `INFO server`; returns the answering server's pid once
/// it replies `+PONG` (not `-LOADING` etc.).
fn server_pid(port: u16) -> Option<u32> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .ok()?;
    stream
        .write_all(b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")
        .ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if !text.starts_with("+PONG\r\n") && text.len() >= 7 {
            return None;
        }
        if let Some(rest) = text.split("process_id:").nth(1)
            && let Some((pid, _)) = rest.split_once("\r\n")
        {
            return pid.trim().parse().ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn start_answers_ping_off_6379() {
        let server = RedisServer::start();
        assert_ne!(server.port(), 6379);
        let mut con = server.client().await;
        let pong: String = redis::cmd("PING")
            .query_async(&mut con)
            .await
            .expect("PING");
        assert_eq!(pong, "PONG");
    }

    #[tokio::test]
    async fn servers_are_isolated() {
        let (a, b) = (RedisServer::start(), RedisServer::start());
        assert_ne!(a.port(), b.port());
        assert_eq!(a.cli(&["SET", "k", "v"]), "OK");
        let mut con = b.client().await;
        let got: Option<String> = redis::cmd("GET")
            .arg("k")
            .query_async(&mut con)
            .await
            .expect("GET");
        assert_eq!(got, None);
    }

    #[tokio::test]
    async fn restart_with_aof_keeps_data() {
        let mut server = RedisServer::start_with(ServerOptions {
            appendonly: true,
            ..ServerOptions::default()
        });
        let (port, old_pid) = (server.port(), server.pid());
        assert_eq!(server.cli(&["SET", "survivor", "yes"]), "OK");
        server.restart();
        assert_eq!(server.port(), port);
        assert_ne!(server.pid(), old_pid);
        let mut con = server.client().await;
        let got: Option<String> = redis::cmd("GET")
            .arg("survivor")
            .query_async(&mut con)
            .await
            .expect("GET");
        assert_eq!(got.as_deref(), Some("yes"));
    }
}
