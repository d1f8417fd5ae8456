//! How many connections each client holds, so one address cannot take them all
//! ([`ServeLimits::max_connections_per_client`](super::ServeLimits::max_connections_per_client)).
//! A client is an IPv4 address or an IPv6 /64, as the login throttle counts
//! ([`Client::of`]). The table only holds clients with a connection open, so it is never
//! larger than the connection cap.

use crate::throttle::Client;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often refused connections are reported in the log, at most.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The open connections of each client.
#[derive(Debug)]
pub(super) struct PerClient {
    max: usize,
    open: Mutex<HashMap<Client, usize>>,
}

/// One connection's place in its client's count, given back when dropped.
#[derive(Debug)]
pub(super) struct Slot {
    table: Arc<PerClient>,
    client: Client,
}

impl PerClient {
    pub(super) fn new(max: usize) -> Arc<PerClient> {
        Arc::new(PerClient {
            max,
            open: Mutex::default(),
        })
    }

    /// A slot for a connection from `peer`, or `None` if its client holds `max` already.
    pub(super) fn admit(self: &Arc<Self>, peer: SocketAddr) -> Option<Slot> {
        let client = Client::of(Some(peer));
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(client).or_default();
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Slot {
            table: Arc::clone(self),
            client,
        })
    }

    #[cfg(test)]
    fn clients(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self
            .table
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// The log of connections refused at a client's cap: the first of a minute with its
/// address, the rest summed up in the next line, so a client hammering the cap cannot flood
/// the log.
#[derive(Debug, Default)]
pub(super) struct Refusals {
    last: Option<Instant>,
    since: u64,
}

impl Refusals {
    pub(super) fn note(&mut self, peer: SocketAddr, max: usize) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.saturating_duration_since(last) < LOG_EVERY)
        {
            self.since += 1;
            return;
        }
        tracing::warn!(
            client = %peer.ip(),
            max_connections_per_client = max,
            refused_since_last_report = self.since,
            "a client is at its connection cap: its new connections are closed until one ends"
        );
        *self = Refusals {
            last: Some(now),
            since: 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|_| panic!("{text}"))
    }

    #[test]
    fn a_client_holds_at_most_its_cap_and_gets_a_slot_back_when_one_ends() {
        let table = PerClient::new(2);
        let first = table.admit(peer("10.0.0.1:1000"));
        let second = table.admit(peer("10.0.0.1:1001"));
        assert!(first.is_some() && second.is_some());
        assert!(table.admit(peer("10.0.0.1:1002")).is_none());
        assert!(
            table.admit(peer("10.0.0.2:1000")).is_some(),
            "another client"
        );
        drop(first);
        assert!(table.admit(peer("10.0.0.1:1003")).is_some());
        drop(second);
        assert_eq!(table.clients(), 0, "no one left: nothing remembered");
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let table = PerClient::new(1);
        let held = table.admit(peer("[2001:db8:1:2::a]:1000"));
        assert!(held.is_some());
        assert!(table.admit(peer("[2001:db8:1:2:ffff::b]:1000")).is_none());
        assert!(table.admit(peer("[2001:db8:1:3::a]:1000")).is_some());
    }
}
