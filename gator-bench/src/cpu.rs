//! CPU per job, for the measured phase only: this process's (the worker, or the dispatching
//! client) from `/proc/self/stat`, and Redis's from `INFO cpu`, each read before and after, so
//! that what the untimed setup spent is not counted.

use redis::aio::ConnectionLike;

/// Clock ticks per second of `/proc/self/stat`'s times: Linux's USER_HZ, 100 on every
/// architecture it builds for (`getconf CLK_TCK`).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds used so far: this process's, and Redis's (`None` on a cluster, whose nodes each
/// have their own, or when `INFO` does not say).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    own: f64,
    redis: Option<f64>,
}

/// What a measured phase cost, per job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerJob {
    /// This process's CPU µs per job.
    pub worker_us: f64,
    /// Redis's CPU µs per job, if it was read.
    pub redis_us: Option<f64>,
    /// Jobs per CPU second, this process's and Redis's together.
    pub per_cpu_second: f64,
}

/// This process's user + system CPU seconds, from the 14th and 15th fields of
/// `/proc/self/stat` (after the command name, which may hold spaces, in parentheses).
pub fn own_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    parse_stat(&stat).unwrap_or(0.0)
}

fn parse_stat(stat: &str) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields from the state (3rd) on: utime is the 14th, stime the 15th.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / TICKS_PER_SECOND)
}

/// Redis's user + system CPU seconds (`used_cpu_user` + `used_cpu_sys` of `INFO cpu`).
pub async fn redis_seconds(conn: &mut impl ConnectionLike) -> Option<f64> {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await.ok()?;
    parse_info(&info)
}

fn parse_info(info: &str) -> Option<f64> {
    let field = |name: &str| -> Option<f64> {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
    };
    Some(field("used_cpu_user")? + field("used_cpu_sys")?)
}

impl Sample {
    /// Now; Redis's share through `conn` unless `cluster`.
    pub async fn take(conn: &mut impl ConnectionLike, cluster: bool) -> Sample {
        let redis = if cluster {
            None
        } else {
            redis_seconds(conn).await
        };
        Sample {
            own: own_seconds(),
            redis,
        }
    }

    /// What was spent from `self` to `later`, per job of `n`.
    pub fn per_job(&self, later: &Sample, n: usize) -> PerJob {
        let jobs = n.max(1) as f64;
        let own = (later.own - self.own).max(0.0);
        let redis = match (self.redis, later.redis) {
            (Some(a), Some(b)) => Some((b - a).max(0.0)),
            _ => None,
        };
        let total = own + redis.unwrap_or(0.0);
        PerJob {
            worker_us: own * 1e6 / jobs,
            redis_us: redis.map(|r| r * 1e6 / jobs),
            per_cpu_second: if total > 0.0 { jobs / total } else { 0.0 },
        }
    }
}

impl PerJob {
    /// The three fields of a `RESULT` line, without braces.
    pub fn json_fields(&self) -> String {
        let redis = self
            .redis_us
            .map_or_else(|| "null".to_owned(), |r| format!("{r:.2}"));
        format!(
            r#""worker_cpu_us_per_job":{:.2},"redis_cpu_us_per_job":{redis},"jobs_per_cpu_second":{:.0}"#,
            self.worker_us, self.per_cpu_second
        )
    }

    /// The same, for a person.
    pub fn summary(&self) -> String {
        let redis = self
            .redis_us
            .map_or_else(|| "?".to_owned(), |r| format!("{r:.1}"));
        format!(
            "CPU per job: this process {:.1} µs, Redis {redis} µs; {:.0} jobs per CPU second",
            self.worker_us, self.per_cpu_second
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_times_are_read_after_a_name_with_spaces() {
        let stat = "4242 (gator bench) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0";
        assert_eq!(parse_stat(stat), Some(3.0));
        assert!(own_seconds() >= 0.0);
    }

    #[test]
    fn info_cpu_is_user_plus_sys() {
        let info = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9\r\n";
        assert_eq!(parse_info(info), Some(3.75));
        assert_eq!(parse_info("# CPU\r\n"), None);
    }

    #[test]
    fn per_job_divides_the_phase_by_its_jobs() {
        let before = Sample {
            own: 1.0,
            redis: Some(10.0),
        };
        let after = Sample {
            own: 1.5,
            redis: Some(10.25),
        };
        let cost = before.per_job(&after, 50_000);
        assert_eq!(cost.worker_us, 10.0);
        assert_eq!(cost.redis_us, Some(5.0));
        assert!((cost.per_cpu_second - 50_000.0 / 0.75).abs() < 1e-6);
        let unknown = Sample {
            own: 1.0,
            redis: None,
        }
        .per_job(&after, 10);
        assert_eq!(unknown.redis_us, None);
    }
}
