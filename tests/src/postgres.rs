//! A private PostgreSQL server for a test: its own cluster made by `initdb` in a temp dir, on a
//! free port of 127.0.0.1 (never 5432), started with `pg_ctl`, stopped when dropped. Under root
//! (CI), PostgreSQL refuses to run: the cluster then belongs to the `postgres` user and every
//! command runs through `runuser -u postgres`. `scripts/ensure-postgres` installs the server.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::TempDir;

/// A running PostgreSQL server of a test's own.
pub struct PostgresServer {
    bin: PathBuf,
    port: u16,
    /// Declared last so the directory outlives the server that writes into it.
    dir: TempDir,
}

/// Where the server's programs are: `GATOR_TEST_PG_BIN`, else the newest
/// `/usr/lib/postgresql/<version>/bin` (Debian's layout), else the directory of `initdb` on
/// PATH.
fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("GATOR_TEST_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    let out = Command::new("sh")
        .args(["-c", "command -v initdb"])
        .output()
        .expect("running sh");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        !path.is_empty(),
        "PostgreSQL is not installed: run scripts/ensure-postgres"
    );
    Path::new(&path)
        .parent()
        .expect("initdb's dir")
        .to_path_buf()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `program` of the server's bin dir, as `postgres` under root; panics with its output if
/// it fails.
fn run(bin: &Path, program: &str, args: &[&str]) -> Output {
    let path = bin.join(program);
    let out = if is_root() {
        Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(&path)
            .args(args)
            .output()
    } else {
        Command::new(&path).args(args).output()
    }
    .unwrap_or_else(|e| panic!("running {}: {e}", path.display()));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl PostgresServer {
    /// Makes a cluster in a temp dir and starts it on a free port.
    ///
    /// # Panics
    /// If PostgreSQL is not installed or does not start.
    pub fn start() -> PostgresServer {
        let bin = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("gator-pg-")
            .tempdir()
            .expect("creating a temp dir for PostgreSQL");
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .expect("running chown");
            assert!(status.success(), "chown of the PostgreSQL dir failed");
        }
        let data = dir.path().join("data");
        let data = data.to_str().expect("a UTF-8 temp path");
        run(
            &bin,
            "initdb",
            &[
                "-D",
                data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let server = PostgresServer {
            bin,
            port: crate::free_port(),
            dir,
        };
        server.launch();
        server
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn launch(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("postgres.log").display().to_string();
        run(
            &self.bin,
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-l",
                &log,
                "-o",
                &options,
                "-w",
                "-t",
                "30",
                "start",
            ],
        );
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The TCP port; the same after [`restart`](Self::restart).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server (`pg_ctl stop -m fast`: sessions are ended), waiting for it.
    pub fn stop(&self) {
        run(
            &self.bin,
            "pg_ctl",
            &["-D", &self.data(), "-m", "fast", "-w", "stop"],
        );
    }

    /// Starts a stopped server again, on the same port and data.
    pub fn start_again(&self) {
        self.launch();
    }

    /// Stops and starts the server: every connection to it is cut.
    pub fn restart(&self) {
        self.stop();
        self.start_again();
    }

    /// The server's log, for a failing test's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        let path = self.bin.join("pg_ctl");
        let data = self.data();
        let args = ["-D", data.as_str(), "-m", "immediate", "-w", "stop"];
        let _ = if is_root() {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&path)
                .args(args)
                .output()
        } else {
            Command::new(&path).args(args).output()
        };
    }
}
