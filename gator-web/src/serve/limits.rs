//! What [`serve`](super::serve) allows a connection, and what a sound set of limits is.

use crate::config::ConfigError;
use std::time::Duration;

/// What [`serve`](crate::serve) allows a connection. [`ServeLimits::validate`] says what is
/// sound; `serve` refuses anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeLimits {
    /// How long a request's head may take to arrive, and a keep-alive connection may sit idle;
    /// above zero. Default 10 s.
    pub header_timeout: Duration,
    /// How long a write of an answer may wait for the client to read, without a byte going
    /// out, before the connection is closed: a client that asks and never reads its answers
    /// (its receive window shut) gives its connection back after this. Only a write that
    /// waits counts: a handler still working on its answer is bounded by
    /// [`WebConfig::request_timeout`](crate::WebConfig::request_timeout), not by this. Above
    /// zero. Default 30 s.
    pub write_timeout: Duration,
    /// The kernel's send buffer of each connection, in bytes (`SO_SNDBUF`; Linux doubles it
    /// for its bookkeeping), instead of one that grows to 4 MiB for a client that does not
    /// read. It bounds what a connection pins in the kernel (64 of them from one address, 64
    /// KiB each: some 8 MiB), and makes a client that stopped reading show as a waiting write
    /// soon, for [`ServeLimits::write_timeout`]. Answers go out at most this much per round
    /// trip: 64 KiB is 1.3 MB/s over a 50 ms round trip, plenty for the dashboard. At least
    /// 4,096. Default 65,536.
    pub send_buffer_bytes: usize,
    /// The most connections open at once; at least 1. Default 512.
    pub max_connections: usize,
    /// The most connections one client holds at once: an IPv4 address, or an IPv6 /64 (the
    /// block one host usually holds, as the login throttle counts). Past it, a new connection
    /// from that client is closed at once, so one address cannot take every connection. At
    /// least 1; at or above [`ServeLimits::max_connections`] it changes nothing. Behind a
    /// proxy every client is the proxy: raise it to `max_connections`. Default 64.
    pub max_connections_per_client: usize,
    /// The most requests a connection may have answered in a row while the server never had
    /// to wait for the client to send more (HTTP/1.1 pipelining: requests sent without
    /// waiting for the answers). The last of them is answered with `Connection: close` and the
    /// connection ends, so one connection cannot pile up answers its client does not read. A
    /// client that waits for each answer before it asks again is never cut. At least 1.
    /// Default 32.
    pub max_pipelined_requests: usize,
    /// How long a shutdown waits for the requests in flight. Default 10 s.
    pub shutdown_grace: Duration,
}

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            header_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            send_buffer_bytes: 64 * 1024,
            max_connections: 512,
            max_connections_per_client: 64,
            max_pipelined_requests: 32,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

impl ServeLimits {
    /// Checks the limits: timeouts and caps above zero (a zero timeout would close every
    /// connection at once, a zero cap refuse them all), a send buffer of 4,096 bytes or more.
    /// The binary exits 2 with the message; [`serve`](crate::serve) returns it as an
    /// `InvalidInput` error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.send_buffer_bytes < 4096 {
            return Err(ConfigError::BadLimit {
                what: "the send buffer (--send-buffer-bytes)",
                rule: "at least 4096 bytes",
            });
        }
        let zero = [
            (
                "the header timeout (--header-timeout)",
                self.header_timeout.is_zero(),
            ),
            (
                "the write timeout (--write-timeout)",
                self.write_timeout.is_zero(),
            ),
            (
                "the connection cap (--max-connections)",
                self.max_connections == 0,
            ),
            (
                "the connection cap per client (--max-connections-per-client)",
                self.max_connections_per_client == 0,
            ),
            (
                "the pipeline cap (--max-pipelined-requests)",
                self.max_pipelined_requests == 0,
            ),
        ];
        match zero.iter().find(|(_, zero)| *zero) {
            Some((what, _)) => Err(ConfigError::BadLimit {
                what,
                rule: "above zero",
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_hold_one_client_below_the_global_cap_and_zero_limits_are_refused() {
        let limits = ServeLimits::default();
        assert_eq!(limits.validate(), Ok(()));
        assert!(limits.max_connections_per_client < limits.max_connections);
        let zero = [
            ServeLimits {
                write_timeout: Duration::ZERO,
                ..limits
            },
            ServeLimits {
                max_connections_per_client: 0,
                ..limits
            },
            ServeLimits {
                max_pipelined_requests: 0,
                ..limits
            },
            ServeLimits {
                header_timeout: Duration::ZERO,
                ..limits
            },
        ];
        let small = ServeLimits {
            send_buffer_bytes: 4095,
            ..limits
        };
        assert!(small.validate().is_err());
        for limits in zero {
            let refused = limits.validate().map_err(|e| e.to_string());
            assert!(
                refused
                    .as_ref()
                    .is_err_and(|e| e.ends_with("must be above zero")),
                "{limits:?}: {refused:?}"
            );
        }
    }
}
