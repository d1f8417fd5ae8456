//! Measuring: clocks, percentiles, peak memory, and the `RESULT` line run-all reads.

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock µs since the epoch: the latency phases compare two processes' clocks.
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// This process's peak resident memory (VmHWM) in MiB, as the peers report it.
pub fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The `p`-th percentile of sorted µs values, in ms, by nearest rank (as the peers compute it).
pub fn percentile_ms(sorted_us: &[i64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let index = ((p / 100.0) * (sorted_us.len() as f64 - 1.0)).round() as usize;
    sorted_us[index] as f64 / 1000.0
}

/// Prints the machine-readable line run-all greps for (`RESULT {json}`) and a human summary.
pub fn report(json: String, summary: String) {
    eprintln!("{summary}");
    println!("RESULT {json}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let v: Vec<i64> = (1..=100).map(|ms| ms * 1000).collect();
        assert_eq!(percentile_ms(&v, 50.0), 51.0);
        assert_eq!(percentile_ms(&v, 99.0), 99.0);
        assert_eq!(percentile_ms(&[], 50.0), 0.0);
    }

    #[test]
    fn peak_rss_is_read_from_proc() {
        assert!(peak_rss_mib() > 0.0);
    }
}
