//! What the outbox crash tests share: the servers, committed rows, relay processes to kill,
//! and the count of jobs Redis holds by jid.

use gator::outbox::sqlx::PgPool;
use gator_tests::{PostgresServer, RedisServer, WorkerProcess};
use std::collections::{HashMap, HashSet};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A private PostgreSQL with the outbox's schema and a private Redis (one server in every mode:
/// the tests stop it, and read its lists by hand).
pub async fn servers() -> (PostgresServer, RedisServer, PgPool) {
    let pg = PostgresServer::start();
    let redis = RedisServer::start_single();
    let pool = PgPool::connect(&pg.url()).await.unwrap();
    gator::outbox::migrate(&pool).await.unwrap();
    (pg, redis, pool)
}

/// Committed rows not yet in Redis (dead ones aside).
pub async fn waiting(pool: &PgPool) -> i64 {
    gator::outbox::sqlx::query_scalar("SELECT count(*) FROM gator_outbox WHERE dead_at IS NULL")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The jids of the jobs on `queue`'s list, head first (the order the relay pushed them in).
pub async fn queued(redis: &RedisServer, queue: &str) -> Vec<String> {
    let payloads: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("gator:{{{queue}}}:queue"))
        .arg(0)
        .arg(-1)
        .query_async(&mut redis.client().await)
        .await
        .unwrap();
    payloads
        .iter()
        .map(|p| {
            let v: serde_json::Value = serde_json::from_str(p).unwrap();
            v["jid"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// Committed jids Redis lacks, and jids Redis holds more than once (with how many times).
pub fn tally(committed: &[String], found: &[String]) -> (Vec<String>, Vec<(String, usize)>) {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for jid in found {
        *counts.entry(jid).or_default() += 1;
    }
    let missing = committed
        .iter()
        .filter(|jid| !counts.contains_key(jid.as_str()))
        .cloned()
        .collect();
    let known: HashSet<&str> = committed.iter().map(String::as_str).collect();
    let mut doubled: Vec<(String, usize)> = counts
        .into_iter()
        .filter(|(jid, n)| *n > 1 || !known.contains(jid))
        .map(|(jid, n)| (jid.to_owned(), n))
        .collect();
    doubled.sort();
    (missing, doubled)
}

/// A relay process (`gator-test-relay`) from `pg`'s outbox to `redis`, `batch` rows a batch;
/// with `abort_after`, it aborts after that batch's Redis write, before the rows' delete.
pub fn relay(
    pg: &PostgresServer,
    redis: &RedisServer,
    batch: usize,
    abort_after: Option<u64>,
) -> WorkerProcess {
    // Through a shell that turns core dumps off, then execs the relay (same pid): a hundred
    // aborts must not write a hundred cores where a CI machine allows them.
    let mut command = Command::new("sh");
    command
        .args(["-c", "ulimit -c 0 && exec \"$0\""])
        .arg(env!("CARGO_BIN_EXE_gator-test-relay"))
        .env("DATABASE_URL", pg.url())
        .env("REDIS_URL", redis.url())
        .env("GATOR_RELAY_BATCH", batch.to_string())
        .env_remove("GATOR_OUTBOX_ABORT_AFTER")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(n) = abort_after {
        command.env("GATOR_OUTBOX_ABORT_AFTER", n.to_string());
    }
    WorkerProcess(command.spawn().expect("starting gator-test-relay"))
}

/// A small xorshift generator: the kill loops' moments, reproducible from the seed they print.
pub struct Rng(u64);

impl Rng {
    /// Seeded from `GATOR_TEST_SEED`, else the clock; prints the seed.
    pub fn new() -> Rng {
        let seed = std::env::var("GATOR_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("kill loop seed: GATOR_TEST_SEED={seed}");
        Rng(seed | 1)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// How the relays of a kill loop died.
#[derive(Debug, Default)]
pub struct Kills {
    /// Aborted by the seam, after a batch's Redis write and before its delete.
    pub at_seam: usize,
    /// SIGKILLed by the test at a random moment.
    pub sigkilled: usize,
}

/// Keeps `parallel` relay processes running until the outbox is empty, killing them all along:
/// two in three are started with the seam set at a random batch (1 to 4), the others to be
/// SIGKILLed by the test after a random pause; a relay that died is replaced at once.
pub async fn kill_relays_until_drained(
    pg: &PostgresServer,
    redis: &RedisServer,
    pool: &PgPool,
    parallel: usize,
    batch: usize,
) -> Kills {
    let mut rng = Rng::new();
    let mut kills = Kills::default();
    // Each relay, with whether the seam ends it (the test SIGKILLs only the others).
    let mut running: Vec<(WorkerProcess, bool)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        running.retain_mut(|(relay, _)| match relay.try_wait().unwrap() {
            None => true,
            Some(status) => {
                // SIGABRT is the seam; anything else is a relay that failed on its own.
                assert_eq!(
                    status.signal(),
                    Some(6),
                    "a relay exited by itself: {status}"
                );
                kills.at_seam += 1;
                false
            }
        });
        if waiting(pool).await == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the relays never drained the outbox ({} rows left, {kills:?})",
            waiting(pool).await
        );
        while running.len() < parallel {
            // Two in three end at the seam: a plain relay drains many batches between kills,
            // so with even odds a fast relay emptied the outbox after 16 seam kills of 20.
            let abort_after = (rng.below(3) != 0).then(|| 1 + rng.below(4));
            running.push((relay(pg, redis, batch, abort_after), abort_after.is_some()));
        }
        tokio::time::sleep(Duration::from_millis(5 + rng.below(45))).await;
        // Each plain relay still running is SIGKILLed now with even odds: no code of it runs.
        // One that exited first is reaped above (a plain relay only exits by a signal, so
        // that fails the test).
        for (relay, seam) in running.iter_mut() {
            if !*seam && rng.below(2) == 0 && relay.try_wait().unwrap().is_none() {
                relay.kill().unwrap();
                relay.wait().unwrap();
                kills.sigkilled += 1;
            }
        }
        running.retain_mut(|(relay, seam)| *seam || relay.try_wait().unwrap().is_none());
    }
    kills
}
