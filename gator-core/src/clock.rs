//! Milliseconds since the Unix epoch: the unit of every timestamp and score Gator stores, and
//! this host's reading of it (an estimate of Redis's clock at best: Redis's `TIME` decides).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, the unit of every timestamp and score Gator stores.
pub fn now_ms() -> u64 {
    to_ms(SystemTime::now())
}

/// `time` in ms since the Unix epoch (0 for times before it).
pub fn to_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
