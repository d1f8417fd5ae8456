//! Failed logins, throttled per client address, so a token cannot be guessed at speed.
//!
//! Each client address has a token bucket of [`AuthThrottle::burst`] failures, one coming back
//! every [`AuthThrottle::refill`]. A wrong bearer token, basic-auth password or `?token=` takes
//! one; once the burst is spent, every request from that address is answered 429 with
//! `Retry-After`, without its credentials even being checked: 10,000 guesses a second become
//! the burst, then one per refill. A session cookie that does not verify is not counted: it is
//! an HMAC no one can guess, and a browser keeps sending an old one after the token changed.
//!
//! - **Who is a client.** The peer address from axum's `ConnectInfo<SocketAddr>`, which
//!   [`crate::serve`] sets; an IPv6 address counts by its /64, the block one host usually
//!   holds. A router mounted without it (`axum::serve(listener, app)` without
//!   `into_make_service_with_connect_info`), or behind a proxy, sees every client as one: they
//!   share one bucket, so guessing is still throttled, but one client's failures make everyone
//!   wait.
//! - **Bounded.** At most [`AuthThrottle::max_clients`] addresses are remembered; past that the
//!   one remembered first is forgotten (it starts again with a full burst). A bucket is kept
//!   as one instant: when it is full again (GCRA, the "theoretical arrival time").
//! - **Logged, bounded.** The first failure of a minute is logged with its address; the rest
//!   are summed up in one line the next minute: at most two lines a minute, however many
//!   guesses.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often the failures are summed up in the log.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// How failed logins are throttled, per client address (see the [module docs](self): who is a
/// client, and what happens without `ConnectInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthThrottle {
    /// Failures a client may make before it must wait. Default 10.
    pub burst: u32,
    /// How often one more failure is allowed once the burst is spent. Default 6 s (ten a
    /// minute).
    pub refill: Duration,
    /// The most client addresses remembered. Default 10,000.
    pub max_clients: usize,
}

impl Default for AuthThrottle {
    fn default() -> AuthThrottle {
        AuthThrottle {
            burst: 10,
            refill: Duration::from_secs(6),
            max_clients: 10_000,
        }
    }
}

impl AuthThrottle {
    /// Whether its burst, refill and max clients are all above zero ([`WebConfig::validate`]
    /// refuses it otherwise).
    ///
    /// [`WebConfig::validate`]: crate::WebConfig::validate
    pub(crate) fn is_sound(&self) -> bool {
        self.burst > 0 && !self.refill.is_zero() && self.max_clients > 0
    }
}

/// Whom a failure is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Client {
    /// An IPv4 address, or an IPv6 /64.
    Ip(IpAddr),
    /// The router does not know its peers: everyone shares one bucket.
    Unknown,
}

impl Client {
    /// The client behind `peer`.
    pub(crate) fn of(peer: Option<SocketAddr>) -> Client {
        match peer.map(|p| p.ip().to_canonical()) {
            Some(IpAddr::V6(v6)) => {
                let [a, b, c, d, ..] = v6.segments();
                Client::Ip(IpAddr::V6(std::net::Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0)))
            }
            Some(v4) => Client::Ip(v4),
            None => Client::Unknown,
        }
    }
}

/// The buckets of one router.
#[derive(Debug)]
pub(crate) struct Throttle {
    config: AuthThrottle,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    /// When each client's bucket is full again.
    full_at: HashMap<Client, Instant>,
    /// The clients in the order they were first remembered: the front is forgotten first.
    order: VecDeque<Client>,
    log: LogWindow,
}

/// What the log has not said yet.
#[derive(Debug, Default)]
struct LogWindow {
    started: Option<Instant>,
    failures: u64,
    refused: u64,
}

impl Throttle {
    pub(crate) fn new(config: AuthThrottle) -> Throttle {
        Throttle {
            config,
            table: Mutex::default(),
        }
    }

    /// Before the credentials are checked: `Err(retry_after)` once `client`'s burst is spent.
    pub(crate) fn admit(&self, client: Client, now: Instant) -> Result<(), Duration> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(full_at) = table.full_at.get(&client).copied() else {
            return Ok(());
        };
        // The bucket is empty when it needs more than burst - 1 refills to be full.
        let spare = self.config.refill * (self.config.burst - 1);
        let wait = full_at.saturating_duration_since(now).saturating_sub(spare);
        if wait.is_zero() {
            return Ok(());
        }
        table.log.refused += 1;
        Err(wait)
    }

    /// After credentials were checked and were wrong.
    pub(crate) fn fail(&self, client: Client, now: Instant) {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let table = &mut *table;
        if !table.full_at.contains_key(&client) {
            if table.order.len() >= self.config.max_clients
                && let Some(oldest) = table.order.pop_front()
            {
                table.full_at.remove(&oldest);
            }
            table.order.push_back(client);
        }
        let full_at = table.full_at.entry(client).or_insert(now);
        *full_at = (*full_at).max(now) + self.config.refill;
        table.log.record(client, now, table.order.len());
    }

    #[cfg(test)]
    fn remembered(&self) -> usize {
        let table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        table.full_at.len()
    }
}

impl LogWindow {
    /// One failure: logged if it is the first of its minute, else counted for the summary.
    fn record(&mut self, client: Client, now: Instant, clients: usize) {
        let fresh = self
            .started
            .is_none_or(|started| now.saturating_duration_since(started) >= LOG_EVERY);
        if !fresh {
            self.failures += 1;
            return;
        }
        if self.failures > 0 || self.refused > 0 {
            tracing::warn!(
                failures = self.failures,
                refused = self.refused,
                clients,
                "more failed dashboard logins since the last report (refused: answered 429 without checking)"
            );
        }
        let address = match client {
            Client::Ip(ip) => ip.to_string(),
            Client::Unknown => "unknown (no ConnectInfo)".to_owned(),
        };
        tracing::warn!(
            client = %address,
            "failed dashboard login; further failures are summed up once a minute"
        );
        *self = LogWindow {
            started: Some(now),
            failures: 0,
            refused: 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle(burst: u32, max_clients: usize) -> Throttle {
        Throttle::new(AuthThrottle {
            burst,
            refill: Duration::from_secs(6),
            max_clients,
        })
    }

    fn client(last: u8) -> Client {
        Client::of(Some(SocketAddr::from(([10, 0, 0, last], 4000))))
    }

    #[test]
    fn a_client_gets_its_burst_then_waits_one_refill_per_failure() {
        let throttle = throttle(3, 10);
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(throttle.admit(client(1), now), Ok(()));
            throttle.fail(client(1), now);
        }
        assert_eq!(throttle.admit(client(1), now), Err(Duration::from_secs(6)));
        assert_eq!(
            throttle.admit(client(2), now),
            Ok(()),
            "others are not held"
        );
        let later = now + Duration::from_secs(6);
        assert_eq!(throttle.admit(client(1), later), Ok(()));
        throttle.fail(client(1), later);
        assert!(throttle.admit(client(1), later).is_err());
        assert_eq!(
            throttle.admit(client(1), later + Duration::from_secs(60)),
            Ok(())
        );
    }

    #[test]
    fn the_table_forgets_the_oldest_client_past_its_cap() {
        let throttle = throttle(1, 2);
        let now = Instant::now();
        for last in 1..=3 {
            throttle.fail(client(last), now);
        }
        assert_eq!(throttle.remembered(), 2);
        assert_eq!(throttle.admit(client(1), now), Ok(()), "forgotten");
        assert!(throttle.admit(client(3), now).is_err());
    }

    #[test]
    fn ipv6_clients_count_by_their_64_and_mapped_v4_as_v4() {
        let a = Client::of("[2001:db8:1:2::a]:1".parse().ok());
        let b = Client::of("[2001:db8:1:2:ffff::b]:2".parse().ok());
        assert_eq!(a, b);
        let mapped = Client::of("[::ffff:10.0.0.1]:3".parse().ok());
        assert_eq!(mapped, client(1));
        assert_eq!(Client::of(None), Client::Unknown);
    }
}
