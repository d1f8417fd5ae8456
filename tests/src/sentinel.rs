//! A master, a replica and a sentinel of the test's own, all `redis-server` processes on free
//! loopback ports in temp dirs (the sentinel is `redis-server sentinel.conf --sentinel`, so no
//! extra package is needed), killed on drop.

use crate::{RedisServer, ServerOptions, TestCerts, TlsRedis, free_port, signal};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// The name the sentinel monitors the master under.
pub const SENTINEL_SERVICE: &str = "gator-master";

/// A master with one replica, watched by one sentinel (quorum 1, the master down after 1 s).
#[derive(Debug)]
pub struct RedisSentinel {
    servers: Vec<RedisServer>,
    /// With TLS: the certificates, and the sentinel's TLS port.
    tls: Option<(TestCerts, u16)>,
    sentinel: Option<Child>,
    sentinel_port: u16,
    dir: TempDir,
}

impl RedisSentinel {
    /// Starts the master and its replica (both with the AOF on), then the sentinel, and waits
    /// until the replica is in sync and the sentinel knows it (a failover needs both).
    ///
    /// # Panics
    /// If a process does not start, or the set is not ready within 30 s.
    pub fn start() -> RedisSentinel {
        let aof = ServerOptions {
            appendonly: true,
            ..ServerOptions::default()
        };
        let master = RedisServer::start_with(aof.clone());
        let replica = RedisServer::start_with(ServerOptions {
            extra_args: vec![
                "--replicaof".into(),
                "127.0.0.1".into(),
                master.port().to_string(),
            ],
            ..aof
        });
        let master_port = master.port();
        let set = RedisSentinel::watch(vec![master, replica], master_port, None);
        set.wait("the sentinel to know the replica", || {
            set.sentinel_field("num-slaves").as_deref() == Some("1")
        });
        set.wait_until_replicated();
        set
    }

    /// A master that speaks TLS ([`TlsRedis`]: an ACL user `gator` with [`crate::TLS_PASSWORD`],
    /// certificates signed by a test CA) and a sentinel that speaks TLS too and watches it over
    /// TLS. No replica: this set shows the connection, not a failover.
    pub fn start_tls() -> RedisSentinel {
        let tls = TlsRedis::start(false);
        let tls_port = tls.tls_port();
        let files = ["server.pem", "server.key", "ca.pem"].map(|f| tls.cert_file(f));
        let TlsRedis { server, certs, .. } = tls;
        let sentinel_tls_port = free_port();
        let extra = format!(
            "tls-port {sentinel_tls_port}\ntls-cert-file {}\ntls-key-file {}\n\
             tls-ca-cert-file {}\ntls-auth-clients no\ntls-replication yes\n",
            files[0], files[1], files[2]
        );
        let mut set = RedisSentinel::watch(vec![server], tls_port, Some(extra));
        set.tls = Some((certs, sentinel_tls_port));
        set.wait("the sentinel to watch the master", || {
            set.sentinel_field("flags").as_deref() == Some("master")
        });
        set
    }

    /// The sentinel's TLS URL: `rediss+sentinel://gator:<password>@127.0.0.1:PORT/gator-master`.
    ///
    /// # Panics
    /// If the set was not started with [`start_tls`](Self::start_tls).
    pub fn tls_url(&self) -> String {
        let (_, port) = self.tls.as_ref().expect("a set started with start_tls");
        format!(
            "rediss+sentinel://gator:{}@127.0.0.1:{port}/{SENTINEL_SERVICE}",
            crate::TLS_PASSWORD
        )
    }

    /// The certificates of a set started with [`start_tls`](Self::start_tls).
    pub fn certs(&self) -> &TestCerts {
        &self.tls.as_ref().expect("a set started with start_tls").0
    }

    /// Starts a sentinel that watches the master on `master_port` among `servers`, with `extra`
    /// lines in its config.
    fn watch(servers: Vec<RedisServer>, master_port: u16, extra: Option<String>) -> RedisSentinel {
        let dir = tempfile::Builder::new()
            .prefix("gator-sentinel-")
            .tempdir()
            .expect("a temp dir for the sentinel");
        let sentinel_port = free_port();
        let conf = dir.path().join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {sentinel_port}\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n\
                 dir {dir}\nlogfile {dir}/sentinel.log\n{extra}\
                 sentinel monitor {SENTINEL_SERVICE} 127.0.0.1 {master_port} 1\n\
                 sentinel down-after-milliseconds {SENTINEL_SERVICE} 1000\n\
                 sentinel failover-timeout {SENTINEL_SERVICE} 5000\n\
                 sentinel parallel-syncs {SENTINEL_SERVICE} 1\n",
                dir = dir.path().display(),
                extra = extra.unwrap_or_default(),
            ),
        )
        .expect("writing sentinel.conf");
        let sentinel = Command::new(crate::server_binary())
            .arg(&conf)
            .arg("--sentinel")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server --sentinel (install redis-server with scripts/ensure-redis)");
        RedisSentinel {
            servers,
            tls: None,
            sentinel: Some(sentinel),
            sentinel_port,
            dir,
        }
    }

    /// `redis+sentinel://127.0.0.1:PORT/gator-master`.
    pub fn url(&self) -> String {
        format!(
            "redis+sentinel://127.0.0.1:{}/{SENTINEL_SERVICE}",
            self.sentinel_port
        )
    }

    /// The sentinel's port.
    pub fn sentinel_port(&self) -> u16 {
        self.sentinel_port
    }

    /// The port of the master the sentinel names now.
    pub fn master_port(&self) -> u16 {
        let out = self.sentinel_cli(&["SENTINEL", "get-master-addr-by-name", SENTINEL_SERVICE]);
        out.lines()
            .nth(1)
            .and_then(|port| port.trim().parse().ok())
            .unwrap_or_else(|| panic!("the sentinel names no master: {out:?}"))
    }

    /// The server on `port` (the master or the replica).
    pub fn server(&self, port: u16) -> &RedisServer {
        self.servers
            .iter()
            .find(|s| s.port() == port)
            .unwrap_or_else(|| panic!("no server of this set is on port {port}"))
    }

    /// `SENTINEL FAILOVER`: the sentinel promotes the replica and turns the old master into its
    /// replica. Returns the new master's port once the sentinel names it, it says it is a
    /// master, and the old master replicates from it.
    pub fn force_failover(&self) -> u16 {
        let old = self.master_port();
        let out = self.sentinel_cli(&["SENTINEL", "FAILOVER", SENTINEL_SERVICE]);
        assert_eq!(out, "OK", "SENTINEL FAILOVER refused");
        self.wait_for_new_master(old)
    }

    /// SIGKILLs the master, as a crash would; the sentinel notices within a second and fails
    /// over. Returns the killed master's port.
    pub fn kill_master(&mut self) -> u16 {
        let old = self.master_port();
        self.server_mut(old).kill();
        old
    }

    /// Starts the server on `port` again (after [`kill_master`](Self::kill_master)); the
    /// sentinel turns it into a replica of the new master.
    pub fn restart(&mut self, port: u16) {
        self.server_mut(port).restart();
    }

    /// Waits until the sentinel names a master other than `old` and that server says it is
    /// one; returns its port.
    pub fn wait_for_new_master(&self, old: u16) -> u16 {
        self.wait("the sentinel to name a new master", || {
            let now = self.master_port();
            now != old && role(self.server(now)) == "master"
        });
        self.master_port()
    }

    /// Waits until the master has a replica in sync (so `WAIT 1` can succeed).
    pub fn wait_until_replicated(&self) {
        self.wait("the master to have a replica in sync", || {
            let master = self.master_port();
            let replica_up = self.servers.iter().any(|s| {
                s.port() != master
                    && info_replication(s)
                        .get("master_link_status")
                        .map(String::as_str)
                        == Some("up")
                    && info_replication(s).get("master_port").map(String::as_str)
                        == Some(&master.to_string())
            });
            replica_up
                && info_replication(self.server(master))
                    .get("connected_slaves")
                    .is_some_and(|n| n != "0")
        });
    }

    fn server_mut(&mut self, port: u16) -> &mut RedisServer {
        self.servers
            .iter_mut()
            .find(|s| s.port() == port)
            .unwrap_or_else(|| panic!("no server of this set is on port {port}"))
    }

    /// One field of `SENTINEL MASTER` (field and value alternate in redis-cli's output).
    fn sentinel_field(&self, field: &str) -> Option<String> {
        let out = self.sentinel_cli(&["SENTINEL", "MASTER", SENTINEL_SERVICE]);
        let lines: Vec<&str> = out.lines().collect();
        lines
            .chunks(2)
            .find(|pair| pair[0] == field)
            .and_then(|pair| pair.get(1))
            .map(|v| v.to_string())
    }

    fn sentinel_cli(&self, args: &[&str]) -> String {
        crate::cluster::cli(self.sentinel_port, args)
    }

    fn wait(&self, what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready() {
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; sentinel log:\n{}",
                    std::fs::read_to_string(self.dir.path().join("sentinel.log"))
                        .unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `INFO replication` of `server`, as field → value.
fn info_replication(server: &RedisServer) -> HashMap<String, String> {
    server
        .cli(&["INFO", "replication"])
        .lines()
        .filter_map(|line| line.trim().split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `master` or `slave`, from `INFO replication` (empty when it does not answer).
fn role(server: &RedisServer) -> String {
    info_replication(server).remove("role").unwrap_or_default()
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        if let Some(mut child) = self.sentinel.take() {
            signal("-CONT", child.id());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
