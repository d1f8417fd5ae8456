//! The TCP settings every Gator connection uses (keepalive, the unacknowledged-data limit): a
//! leaf, which the shared connection, the plain URL and Sentinel all read. See
//! [`super::connection`] for why a silent socket must be noticed.

use redis::io::tcp::{TcpSettings, socket2::TcpKeepalive};
use std::time::Duration;

/// An idle socket is probed after this long without traffic, then every
/// [`KEEPALIVE_INTERVAL`], and closed after [`KEEPALIVE_RETRIES`] unanswered probes: a peer
/// that vanished is noticed in about 25 s, inside a worker's 20 s lease renewed every 5 s.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
/// The time between keepalive probes.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
/// Unanswered probes before the kernel closes the socket.
pub const KEEPALIVE_RETRIES: u32 = 3;
/// Data sent and not acknowledged for this long closes the socket (`TCP_USER_TIMEOUT`): a
/// request to a peer that vanished fails instead of waiting for retransmissions to give up
/// (about 15 minutes by default).
pub const UNACKED_LIMIT: Duration = Duration::from_secs(20);

/// The TCP settings of every connection Gator opens: keepalive and the unacknowledged-data
/// limit above.
pub fn tcp_settings() -> TcpSettings {
    let keepalive = TcpKeepalive::new().with_time(KEEPALIVE_IDLE);
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    let keepalive = keepalive
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    let settings = TcpSettings::default().set_keepalive(keepalive);
    #[cfg(target_os = "linux")]
    let settings = settings.set_user_timeout(UNACKED_LIMIT);
    settings
}
