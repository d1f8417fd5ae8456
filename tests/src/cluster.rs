//! A Redis Cluster of the test's own: `redis-server` nodes on free loopback ports (each with
//! its bus port at PORT+10000 free too), in temp dirs, joined with `redis-cli --cluster
//! create`, and killed on drop.

use crate::TestCerts;
use std::fs::{File, OpenOptions};
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// One node of a [`RedisCluster`].
#[derive(Debug)]
struct Node {
    port: u16,
    /// With TLS: the node's TLS port (the plain `port` stays open for the harness's redis-cli).
    tls_port: Option<u16>,
    child: Option<Child>,
    /// This process's claim on `port` (see [`claim`]), held as long as the node exists, across
    /// its restarts; declared after `child` so that it is let go after the node is killed.
    _claim: File,
}

/// A running cluster of `masters` masters, each with `replicas` replicas.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<Node>,
    dir: TempDir,
    /// With TLS: the certificates every node serves.
    tls: Option<TestCerts>,
}

/// Whether `port` and its cluster bus port can both be bound on loopback now.
fn free_pair(port: u16) -> bool {
    let Some(bus) = port.checked_add(10_000) else {
        return false;
    };
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
        && TcpListener::bind((Ipv4Addr::LOCALHOST, bus)).is_ok()
}

/// Where the next search for ports starts: shared by the clusters of one test process, so two
/// started at once rarely look at the same ports; spread by pid across processes.
static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// The range cluster ports are taken from. Their bus ports (+10,000) then lie in 30000–32699,
/// below the kernel's ephemeral range (32768 and up on Linux): a port found free there is not
/// taken by some client's outgoing connection before the node binds it. (A bus port in the
/// ephemeral range was: CI saw `Could not create server TCP listening socket
/// 127.0.0.1:51510: Address already in use` for a node on 41510.)
const CLUSTER_PORTS: std::ops::Range<u16> = 20_000..22_700;

/// Claims `port` for this process: an exclusive `flock` on `<temp dir>/gator-cluster-ports/PORT`,
/// or `None` if another claim (of this process or another) holds it. A port that is free to bind
/// is not yet safe to use: nextest runs each test in a process of its own, and two processes that
/// found the same port free before either node bound it would both start a node there; the one
/// that lost the bind would then wait for a PONG from the other's node and join it to its own
/// cluster. The kernel drops the lock when the file is closed or the process dies, so no claim
/// outlives its test.
fn claim(port: u16) -> Option<File> {
    let dir = std::env::temp_dir().join("gator-cluster-ports");
    std::fs::create_dir_all(&dir).expect("creating the dir of cluster port claims");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(port.to_string()))
        .expect("opening a cluster port claim");
    file.try_lock().ok().map(|()| file)
}

/// `count` ports, claimed for this process (see [`claim`]), whose bus ports are free too, never
/// 6379.
fn free_ports(count: usize) -> Vec<(u16, File)> {
    let spread = (std::process::id() % 270) as u16 * 10;
    let _ = NEXT_PORT.compare_exchange(
        0,
        CLUSTER_PORTS.start + spread,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    let mut ports = Vec::new();
    while ports.len() < count {
        let mut candidate = NEXT_PORT.fetch_add(1, Ordering::SeqCst);
        if !CLUSTER_PORTS.contains(&candidate) {
            NEXT_PORT.store(CLUSTER_PORTS.start + 1, Ordering::SeqCst);
            candidate = CLUSTER_PORTS.start;
        }
        if candidate == 6379 {
            continue;
        }
        // Claimed first, then checked: a port someone else bound without a claim (another
        // program) stays out too.
        if let Some(held) = claim(candidate)
            && free_pair(candidate)
        {
            ports.push((candidate, held));
        }
    }
    ports
}

/// Starts the node on `port` with its dir under `dir` (its `nodes.conf` and AOF survive a
/// restart there, so a restarted node rejoins as what the cluster says it is).
/// With `tls`, the node also listens with TLS on its TLS port, and the nodes talk TLS on the
/// cluster bus (`tls-cluster yes`): a client on TLS is then told the TLS ports of the others.
fn spawn_node(dir: &std::path::Path, port: u16, tls: Option<(u16, &TestCerts)>) -> Child {
    let node_dir = dir.join(port.to_string());
    std::fs::create_dir_all(&node_dir).expect("a node dir");
    let mut command = Command::new(crate::server_binary());
    if let Some((tls_port, certs)) = tls {
        command
            .args(["--tls-port", &tls_port.to_string()])
            .args(["--tls-cert-file", &certs.file("server.pem")])
            .args(["--tls-key-file", &certs.file("server.key")])
            .args(["--tls-ca-cert-file", &certs.file("ca.pem")])
            .args(["--tls-auth-clients", "no"])
            // The bus is mutual TLS whatever `tls-auth-clients` says: a node dialling another
            // presents the client certificate.
            .args(["--tls-client-cert-file", &certs.file("client.pem")])
            .args(["--tls-client-key-file", &certs.file("client.key")])
            .args(["--tls-cluster", "yes", "--tls-replication", "yes"])
            // With TLS on the bus, Redis would put the bus at TLS_PORT+10000; keep it where
            // `free_ports` checked, and where redis-cli looks for it.
            .args(["--cluster-port", &(port + 10_000).to_string()]);
    }
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ])
        .args(["--cluster-node-timeout", "2000"])
        // A replica may take over however long since it last heard from its master: on a
        // quiet test cluster that can be longer than the default factor allows.
        .args(["--cluster-replica-validity-factor", "0"])
        .args([
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
        ])
        .args(["--protected-mode", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(&node_dir)
        .arg("--logfile")
        .arg(node_dir.join("redis.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server (install it with scripts/ensure-redis)")
}

impl RedisCluster {
    /// Starts `masters` masters (at least 3) with `replicas` replicas each, with the AOF on
    /// (`appendfsync everysec`), and waits until every node reports `cluster_state:ok`.
    ///
    /// # Panics
    /// If a node does not start or the cluster does not form within 30 s.
    pub fn start(masters: usize, replicas: usize) -> RedisCluster {
        RedisCluster::start_with(masters, replicas, None)
    }

    /// [`start`](Self::start) with TLS: every node also has a TLS port, serving a certificate
    /// for `localhost` and 127.0.0.1 signed by the test CA of `certs`, and the cluster bus
    /// speaks TLS. [`tls_url`](Self::tls_url) names the TLS ports.
    pub fn start_tls(masters: usize, replicas: usize) -> RedisCluster {
        RedisCluster::start_with(masters, replicas, Some(TestCerts::generate()))
    }

    fn start_with(masters: usize, replicas: usize, tls: Option<TestCerts>) -> RedisCluster {
        assert!(masters >= 3, "a cluster needs at least 3 masters");
        let dir = tempfile::Builder::new()
            .prefix("gator-cluster-")
            .tempdir()
            .expect("a temp dir for the cluster");
        let count = masters * (1 + replicas);
        let mut nodes = Vec::new();
        for (port, claim) in free_ports(count) {
            let tls_port = tls.as_ref().map(|_| crate::free_port());
            let child = spawn_node(dir.path(), port, tls_port.zip(tls.as_ref()));
            nodes.push(Node {
                port,
                tls_port,
                child: Some(child),
                _claim: claim,
            });
        }
        let cluster = RedisCluster { nodes, dir, tls };
        for node in &cluster.nodes {
            cluster.wait_for(node.port, "PONG", &["PING"]);
        }
        let addresses: Vec<String> = cluster
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            created.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&created.stdout)
        );
        for node in &cluster.nodes {
            cluster.wait_until_ok(node.port);
        }
        if replicas > 0 {
            cluster.wait_until_replicated(replicas);
        }
        cluster
    }

    /// Waits until every master has `replicas` replicas online: after `--cluster create` they
    /// take seconds to sync, and until then a `WAIT` finds none and no failover could happen.
    pub fn wait_until_replicated(&self, replicas: usize) {
        for master in self.masters() {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let info = cli(master, &["INFO", "replication"]);
                let online = info
                    .lines()
                    .filter(|l| l.starts_with("slave") && l.contains("state=online"))
                    .count();
                if online >= replicas {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "master {master} has {online} of {replicas} replicas online:\n{info}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    fn wait_for(&self, port: u16, answer: &str, args: &[&str]) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !cli(port, args).contains(answer) {
            assert!(
                Instant::now() < deadline,
                "node {port} did not answer {args:?} with {answer}; log:\n{}",
                std::fs::read_to_string(self.log(port)).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_until_ok(&self, port: u16) {
        self.wait_for(port, "cluster_state:ok", &["CLUSTER", "INFO"]);
    }

    fn log(&self, port: u16) -> PathBuf {
        self.dir.path().join(port.to_string()).join("redis.log")
    }

    /// The nodes' URLs, comma-separated: the cluster form of `--redis-url`.
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}", n.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Every node's TLS URL, comma-separated (`rediss://127.0.0.1:TLS_PORT,...`).
    ///
    /// # Panics
    /// If the cluster was not started with [`start_tls`](Self::start_tls).
    pub fn tls_url(&self) -> String {
        self.nodes
            .iter()
            .map(|n| {
                let port = n.tls_port.expect("a cluster started with start_tls");
                format!("rediss://127.0.0.1:{port}")
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The certificates of a cluster started with [`start_tls`](Self::start_tls).
    pub fn certs(&self) -> &TestCerts {
        self.tls.as_ref().expect("a cluster started with start_tls")
    }

    /// The URL of the first node alone: a seed, for `--redis-cluster`.
    pub fn seed_url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.nodes[0].port)
    }

    /// Every node's port.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// The ports of the nodes that are masters now.
    pub fn masters(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|n| n.child.is_some() && cli(n.port, &["ROLE"]).starts_with("master"))
            .map(|n| n.port)
            .collect()
    }

    /// The port of the master that holds `key`'s slot.
    pub fn master_of(&self, key: &str) -> u16 {
        let slot: u16 = cli(self.nodes[0].port, &["CLUSTER", "KEYSLOT", key])
            .parse()
            .expect("a slot number");
        self.masters()
            .into_iter()
            .find(|port| {
                cli(*port, &["CLUSTER", "NODES"])
                    .lines()
                    .find(|l| l.contains("myself"))
                    .is_some_and(|line| owns(line, slot))
            })
            .expect("a master owns every slot")
    }

    /// Runs `redis-cli -c` (following redirects) against the first live node.
    pub fn cli(&self, args: &[&str]) -> String {
        let port = self
            .nodes
            .iter()
            .find(|n| n.child.is_some())
            .expect("a live node")
            .port;
        let out = Command::new("redis-cli")
            .args(["-c", "-p", &port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// SIGKILLs the node on `port`, as a crash would.
    pub fn kill(&mut self, port: u16) {
        if let Some(node) = self.nodes.iter_mut().find(|n| n.port == port)
            && let Some(mut child) = node.child.take()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the node on `port` again (after [`kill`](Self::kill)), in its own dir: a master
    /// whose replica took over meanwhile rejoins as that replica's replica.
    ///
    /// # Panics
    /// If it does not answer within 30 s.
    pub fn restart(&mut self, port: u16) {
        let node = self
            .nodes
            .iter_mut()
            .find(|n| n.port == port)
            .unwrap_or_else(|| panic!("no node of this cluster is on port {port}"));
        node.child = Some(spawn_node(
            self.dir.path(),
            port,
            node.tls_port.zip(self.tls.as_ref()),
        ));
        self.wait_for(port, "PONG", &["PING"]);
    }

    /// Waits until every live node reports `cluster_state:ok` (after a failover).
    pub fn wait_until_healthy(&self) {
        for node in self.nodes.iter().filter(|n| n.child.is_some()) {
            self.wait_until_ok(node.port);
        }
    }
}

/// Whether a `CLUSTER NODES` line's slot ranges include `slot`.
fn owns(line: &str, slot: u16) -> bool {
    line.split_whitespace().skip(8).any(|range| {
        let mut ends = range.split('-');
        match (
            ends.next().and_then(|a| a.parse::<u16>().ok()),
            ends.next().and_then(|b| b.parse::<u16>().ok()),
        ) {
            (Some(a), Some(b)) => (a..=b).contains(&slot),
            (Some(a), None) => a == slot,
            _ => false,
        }
    })
}

/// `redis-cli -p PORT args...`, its trimmed stdout.
pub(crate) fn cli(port: u16, args: &[&str]) -> String {
    Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default()
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a second test process does when its pid spreads it to the same start as a first:
    /// it looks at the same ports, before the first one's nodes have bound them.
    #[test]
    fn a_port_claimed_for_one_cluster_is_not_handed_to_another_that_looks_at_it() {
        let first = free_ports(3);
        let ports: Vec<u16> = first.iter().map(|(port, _)| *port).collect();
        NEXT_PORT.store(ports[0], Ordering::SeqCst);
        let second: Vec<u16> = free_ports(3).into_iter().map(|(port, _)| port).collect();
        assert!(
            second.iter().all(|port| !ports.contains(port)),
            "the second cluster got {second:?}, the first holds {ports:?}"
        );
    }
}
