//! A private PostgreSQL for `gator-bench outbox`: a cluster made by `initdb` in a temp dir on a
//! free port of 127.0.0.1, stopped when dropped. A trimmed copy of the tests' harness
//! (tests/src/postgres.rs), which gator-bench cannot depend on: under root, PostgreSQL refuses
//! to run, so the cluster belongs to `postgres` and runs through `runuser -u postgres`. Unlike
//! the tests' cluster it keeps `fsync` on: the relay's commits are measured as a real database
//! makes them. `scripts/ensure-postgres` installs the server and prints its bin dir.

use anyhow::{Context, bail};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// A running private PostgreSQL server.
pub struct PrivatePostgres {
    bin: PathBuf,
    port: u16,
    /// Declared last so the directory outlives the server that writes into it.
    dir: TempDir,
}

impl PrivatePostgres {
    /// Makes a cluster in a temp dir and starts it on a free port.
    pub fn start() -> anyhow::Result<PrivatePostgres> {
        let bin = bin_dir()?;
        let dir = tempfile::Builder::new()
            .prefix("gator-bench-pg-")
            .tempdir()?;
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()?;
            anyhow::ensure!(status.success(), "chown of the PostgreSQL dir failed");
        }
        let data = dir.path().join("data").display().to_string();
        run(
            &bin,
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                // Only initdb skips its sync; the server fsyncs its commits.
                "--no-sync",
            ],
        )?;
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1",
            dir.path().display()
        );
        let log = dir.path().join("postgres.log").display().to_string();
        let start = [
            "-D", &data, "-l", &log, "-o", &options, "-w", "-t", "30", "start",
        ];
        run(&bin, "pg_ctl", &start)?;
        Ok(PrivatePostgres { bin, port, dir })
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.dir.path().join("data").display().to_string();
        let _ = run(
            &self.bin,
            "pg_ctl",
            &["-D", &data, "-m", "immediate", "-w", "stop"],
        );
    }
}

/// `GATOR_TEST_PG_BIN`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian's layout),
/// else the directory of `initdb` on PATH.
fn bin_dir() -> anyhow::Result<PathBuf> {
    if let Ok(dir) = std::env::var("GATOR_TEST_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    let out = Command::new("sh")
        .args(["-c", "command -v initdb"])
        .output()?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    match Path::new(&path).parent() {
        Some(dir) if !path.is_empty() => Ok(dir.to_path_buf()),
        _ => bail!("PostgreSQL is not installed: run scripts/ensure-postgres"),
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `program` of the server's bin dir, as `postgres` under root.
fn run(bin: &Path, program: &str, args: &[&str]) -> anyhow::Result<()> {
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
    .with_context(|| format!("running {}", path.display()))?;
    if !out.status.success() {
        bail!(
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
