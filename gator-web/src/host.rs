//! Which names the dashboard answers to: the guard's first step, against DNS rebinding.
//!
//! A page on `rebind.attacker.example` whose name the attacker makes resolve to 127.0.0.1 is,
//! to the browser, same-origin with a dashboard listening there: without this check it could
//! read the CSRF token from a page and enqueue, retry, delete and clear. The browser still
//! sends the name it asked for, so a request is answered only if every name it was addressed
//! to is known:
//!
//! 1. the request line's authority (an absolute-form target), its `Host`, and the
//!    `X-Forwarded-Host` a proxy adds, whichever are present;
//! 2. each must be `localhost`, `127.0.0.1` or `[::1]` (any port: no other site can be served
//!    under those names), the bound address with its port, or an allowed host
//!    ([`crate::WebConfig::allowed_hosts`]; an entry without a port matches any port);
//! 3. else 421 `host_not_allowed`, before any handler runs.
//!
//! The check applies without auth (the default dashboard on 127.0.0.1 is the one a rebinding
//! page can reach), and in every auth mode once an operator gave an allowlist.
//!
//! **A request with no `Host` at all is answered.** Every browser sends `Host` (HTTP/1.1
//! requires it), so such a request cannot come from a rebinding page; a client that can reach
//! the port without a browser could send any `Host` it liked, so refusing it would protect
//! nothing and only break HTTP/1.0 probes and in-process calls (`tower::ServiceExt::oneshot`).

use crate::error::ApiError;
use axum::http::header::HOST;
use axum::http::{HeaderMap, StatusCode, Uri};
use std::net::SocketAddr;

/// The longest host name (DNS allows 253 characters).
const MAX_HOST_CHARS: usize = 253;
/// The names no other site can be served under.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// One allowed name: a host (lowercase, an IPv6 address in brackets) and maybe a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPattern {
    host: String,
    port: Option<u16>,
}

impl HostPattern {
    /// `name`, `name:port`, `1.2.3.4`, `[::1]:9090`; no scheme, path or user.
    pub(crate) fn parse(text: &str) -> Result<HostPattern, &'static str> {
        let (host, port) = split(text.trim())?;
        Ok(HostPattern { host, port })
    }

    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        self.host == host && (self.port.is_none() || self.port == port)
    }
}

/// Splits an authority into its host, normalized, and its port.
fn split(text: &str) -> Result<(String, Option<u16>), &'static str> {
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (inside, after) = rest.split_once(']').ok_or("an unclosed [")?;
            let ipv6 = |c: char| c.is_ascii_hexdigit() || c == ':' || c == '.';
            if inside.is_empty() || !inside.chars().all(ipv6) {
                return Err("not an IPv6 address inside [ ]");
            }
            let port = match after {
                "" => None,
                _ => Some(after.strip_prefix(':').ok_or("text after ]")?),
            };
            (format!("[{inside}]"), port)
        }
        None => {
            let (host, port) = match text.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            };
            // `localhost.` is `localhost`: a fully qualified name's trailing dot changes nothing.
            let host = host.strip_suffix('.').unwrap_or(host);
            let name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
            if host.is_empty() || host.len() > MAX_HOST_CHARS || !host.chars().all(name) {
                return Err("a host is letters, digits, '-', '.' and '_' (an IPv6 address in [ ])");
            }
            (host.to_owned(), port)
        }
    };
    let port = match port {
        Some(port) => Some(port.parse::<u16>().map_err(|_| "a port is 0 to 65535")?),
        None => None,
    };
    Ok((host.to_ascii_lowercase(), port))
}

/// The names one router answers to, and whether it checks them.
#[derive(Debug, Clone)]
pub(crate) struct Hosts {
    allowed: Vec<HostPattern>,
    /// An operator gave an allowlist: check in every auth mode.
    explicit: bool,
}

impl Hosts {
    /// Loopback names, the bound address (unless unspecified) and `explicit`.
    pub(crate) fn new(explicit: Vec<HostPattern>, bound: Option<SocketAddr>) -> Hosts {
        let given = !explicit.is_empty();
        let mut allowed: Vec<HostPattern> = LOOPBACK
            .iter()
            .map(|host| HostPattern {
                host: (*host).to_owned(),
                port: None,
            })
            .collect();
        // 0.0.0.0 or [::] is where the server listens, never a name a browser asks for.
        if let Some(bound) = bound.filter(|b| !b.ip().is_unspecified())
            && let Ok(pattern) = HostPattern::parse(&bound.to_string())
        {
            allowed.push(pattern);
        }
        allowed.extend(explicit);
        Hosts {
            allowed,
            explicit: given,
        }
    }

    /// Steps 1 to 3 of the module docs; `has_auth` says whether the router requires auth.
    pub(crate) fn check(
        &self,
        has_auth: bool,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<(), ApiError> {
        if has_auth && !self.explicit {
            return Ok(());
        }
        let forwarded = headers
            .get_all("x-forwarded-host")
            .iter()
            .flat_map(|v| v.to_str().unwrap_or("\u{0}").split(','));
        let named = headers
            .get_all(HOST)
            .iter()
            .map(|v| v.to_str().unwrap_or("\u{0}"))
            .chain(forwarded)
            .chain(uri.authority().map(|a| a.as_str()));
        for name in named {
            let known = split(name.trim())
                .is_ok_and(|(host, port)| self.allowed.iter().any(|p| p.matches(&host, port)));
            if !known {
                return Err(refused(name));
            }
        }
        Ok(())
    }
}

fn refused(name: &str) -> ApiError {
    let shown: String = name.chars().take(100).collect();
    ApiError::new(
        StatusCode::MISDIRECTED_REQUEST,
        "host_not_allowed",
        format!(
            "this dashboard does not answer to the host {shown:?}: open it as localhost or 127.0.0.1, or allow the name with --allowed-host (WebConfig::allowed_hosts)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn asked(hosts: &Hosts, has_auth: bool, host: Option<&str>) -> bool {
        let mut headers = HeaderMap::new();
        if let Some(host) = host {
            headers.insert(HOST, HeaderValue::from_str(host).expect("a header value"));
        }
        hosts
            .check(has_auth, &Uri::from_static("/"), &headers)
            .is_ok()
    }

    #[test]
    fn loopback_names_the_bound_address_and_allowed_hosts_are_answered() {
        let bound = "10.0.0.5:9090".parse().ok();
        let explicit = vec![
            HostPattern::parse("Gator.Example.com").expect("valid"),
            HostPattern::parse("[::2]:8443").expect("valid"),
        ];
        let hosts = Hosts::new(explicit, bound);
        for ok in [
            "localhost",
            "LOCALHOST.:80",
            "127.0.0.1:1",
            "[::1]:9090",
            "10.0.0.5:9090",
            "gator.example.com:443",
            "[::2]:8443",
        ] {
            assert!(asked(&hosts, true, Some(ok)), "{ok}");
        }
        for refused in [
            "10.0.0.5:9091",
            "rebind.attacker.example",
            "[::2]:80",
            "127.0.0.1:x",
            "a b",
            "localhost.evil.example",
        ] {
            assert!(!asked(&hosts, true, Some(refused)), "{refused}");
        }
        assert!(
            asked(&hosts, true, None),
            "no Host cannot come from a browser"
        );
    }

    #[test]
    fn without_an_allowlist_the_host_is_checked_only_without_auth() {
        let hosts = Hosts::new(Vec::new(), "0.0.0.0:9090".parse().ok());
        assert!(!asked(&hosts, false, Some("rebind.attacker.example")));
        assert!(
            !asked(&hosts, false, Some("0.0.0.0:9090")),
            "unspecified is no name"
        );
        assert!(asked(&hosts, true, Some("rebind.attacker.example")));
    }

    #[test]
    fn patterns_refuse_what_is_not_a_host() {
        for bad in [
            "", "http://x", "x/y", "x:99999", "[::1", "[zz]", "x:", "a@b", ":80",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?}");
        }
    }
}
