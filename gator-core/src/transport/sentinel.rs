//! Redis Sentinel: the URL that names a master by its sentinels, and the client that asks them
//! where the master is now.
//!
//! ```text
//! redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB]
//! rediss+sentinel://...        (TLS to the sentinels and to the master)
//! ```
//!
//! - `HOST:PORT` are the sentinels (port 26379 when left out), comma-separated.
//! - `SERVICE` is the master's name in the sentinels' `sentinel monitor` line.
//! - `USER` and `PASSWORD` are the master's (and its replicas'), `DB` its database.
//! - Sentinels that ask for a password of their own get `GATOR_SENTINEL_PASSWORD`.
//!
//! Each connection is opened to the master the sentinels name at that moment, and redis-rs
//! checks with `ROLE` that it is one. When the master goes away or turns into a replica (its
//! commands fail, or answer `READONLY`), the shared connection is replaced by one to the master
//! the sentinels name then (see [`crate::connection`]).

use super::tls::{TlsFiles, install_crypto_provider, load_certificates};
use crate::error::{Error, Result};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, TlsMode};
use std::sync::Arc;
use std::time::Duration;

/// The scheme of a Sentinel URL.
pub const SCHEME: &str = "redis+sentinel";
/// The scheme of a Sentinel URL whose sentinels and master are reached with TLS.
pub const TLS_SCHEME: &str = "rediss+sentinel";
/// The environment variable with the password the sentinels themselves ask for (their
/// `requirepass`), when it is not the master's.
pub const SENTINEL_PASSWORD_ENV: &str = "GATOR_SENTINEL_PASSWORD";
/// A sentinel's port when the URL leaves it out.
pub const DEFAULT_SENTINEL_PORT: u16 = 26379;

/// How long asking the sentinels, and checking the master they name, may take: a frozen
/// sentinel must not hold a reconnection forever.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether `url` is a Sentinel URL (`redis+sentinel://` or `rediss+sentinel://`).
pub fn is_sentinel_url(url: &str) -> bool {
    scheme_of(url).is_some_and(|s| s == SCHEME || s == TLS_SCHEME)
}

fn scheme_of(url: &str) -> Option<String> {
    url.trim()
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase())
}

/// A Sentinel URL taken apart.
#[derive(Debug, PartialEq, Eq)]
struct SentinelUrl {
    tls: bool,
    /// `host:port` of each sentinel, as written (the port filled in).
    sentinels: Vec<String>,
    /// The master's name.
    service: String,
    /// `[user]:password` for the master, as written (percent-encoded).
    userinfo: Option<String>,
    db: i64,
}

impl SentinelUrl {
    fn parse(url: &str) -> std::result::Result<SentinelUrl, String> {
        let url = url.trim();
        let (scheme, rest) = url
            .split_once("://")
            .ok_or("a Sentinel URL starts with redis+sentinel://")?;
        let tls = scheme.eq_ignore_ascii_case(TLS_SCHEME);
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => (Some(userinfo.to_owned()), hosts),
            None => (None, authority),
        };
        let sentinels = hosts
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(with_port)
            .collect::<Vec<_>>();
        if sentinels.is_empty() {
            return Err("no sentinel is named: write redis+sentinel://HOST:PORT/SERVICE".into());
        }
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let mut segments = path.split('/').filter(|s| !s.is_empty());
        let service = segments
            .next()
            .ok_or(
                "the master's service name is missing: write redis+sentinel://HOST:PORT/SERVICE",
            )?
            .to_owned();
        let db = match segments.next() {
            Some(db) => db
                .parse::<i64>()
                .map_err(|_| format!("the database {db:?} is not a number"))?,
            None => 0,
        };
        if segments.next().is_some() {
            return Err("the path has more than SERVICE/DB".into());
        }
        Ok(SentinelUrl {
            tls,
            sentinels,
            service,
            userinfo,
            db,
        })
    }

    fn node_scheme(&self) -> &'static str {
        if self.tls { "rediss" } else { "redis" }
    }

    /// Each sentinel's connection info (address and TLS; no credentials).
    fn sentinel_infos(&self) -> std::result::Result<Vec<ConnectionInfo>, String> {
        self.sentinels
            .iter()
            .map(|host| {
                format!("{}://{host}", self.node_scheme())
                    .into_connection_info()
                    .map_err(|e| format!("the sentinel {host} is not a host:port: {e}"))
            })
            .collect()
    }

    /// The master's credentials and database, decoded by redis-rs's own URL parser.
    fn master_info(&self) -> std::result::Result<ConnectionInfo, String> {
        let userinfo = self
            .userinfo
            .as_deref()
            .map(|u| format!("{u}@"))
            .unwrap_or_default();
        format!("redis://{userinfo}127.0.0.1/{}", self.db)
            .into_connection_info()
            .map_err(|e| format!("the credentials do not parse: {e}"))
    }
}

/// `host` with the default sentinel port when it has none (`[::1]` and `[::1]:26380` too).
fn with_port(host: &str) -> String {
    let has_port = match host.rfind(']') {
        Some(close) => host[close..].contains(':'),
        None => host.contains(':'),
    };
    if has_port {
        host.to_owned()
    } else {
        format!("{host}:{DEFAULT_SENTINEL_PORT}")
    }
}

/// `url` (a Sentinel URL) with its password replaced by `***`.
pub(crate) fn redact(url: &str) -> String {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(a Redis URL that does not parse)".to_owned();
    };
    let (authority, path) = match rest.split_once('/') {
        Some((authority, path)) => (authority, format!("/{path}")),
        None => (rest, String::new()),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:***@{hosts}"),
            None => format!("{userinfo}@{hosts}"),
        },
        None => authority.to_owned(),
    };
    format!("{scheme}://{authority}{path}")
}

/// The sentinels of a master, shared by the connections that follow it.
#[derive(Clone)]
pub(crate) struct Sentinels {
    client: Arc<tokio::sync::Mutex<SentinelClient>>,
    shown_url: String,
}

impl Sentinels {
    /// A connection with `config` to the master the sentinels name now.
    ///
    /// Boxed: the future ends up inside every dispatch's (through the connection replacement
    /// it may spawn), and one more nested `async fn` there takes rustc past its query depth
    /// limit when it checks that future for `Send`.
    pub(crate) fn connect<'a>(
        &'a self,
        config: &'a redis::AsyncConnectionConfig,
    ) -> redis::RedisFuture<'a, redis::aio::MultiplexedConnection> {
        Box::pin(async move {
            self.master()
                .await?
                .get_multiplexed_async_connection_with_config(config)
                .await
        })
    }

    /// The master the sentinels name now, checked to be one.
    async fn master(&self) -> redis::RedisResult<redis::Client> {
        let mut client = self.client.lock().await;
        match tokio::time::timeout(RESOLVE_TIMEOUT, client.async_get_client()).await {
            Ok(found) => {
                if let Ok(master) = &found {
                    tracing::debug!(master = %master.get_connection_info().addr(), "the sentinels name this master");
                }
                found
            }
            Err(_) => Err(redis::RedisError::from((
                redis::ErrorKind::Io,
                "the sentinels did not name a reachable master in time",
                self.shown_url.clone(),
            ))),
        }
    }
}

/// The sentinels named by `url`, with `tls`'s files for a `rediss+sentinel://` URL; and the
/// first sentinel's connection info.
pub(crate) fn open(url: &str, tls: &TlsFiles) -> Result<(Sentinels, ConnectionInfo)> {
    let invalid = |reason: String| Error::InvalidUrl {
        url: redact(url),
        reason,
    };
    let parsed = SentinelUrl::parse(url).map_err(invalid)?;
    let infos = parsed.sentinel_infos().map_err(invalid)?;
    let addrs: Vec<ConnectionAddr> = infos.iter().map(|info| info.addr().clone()).collect();
    let master = parsed.master_info().map_err(invalid)?;
    if !parsed.tls && !tls.is_empty() {
        return Err(Error::Tls {
            reason: format!(
                "TLS files were given, but {} does not use TLS: write {TLS_SCHEME}:// to connect with TLS",
                redact(url)
            ),
        });
    }
    let tcp = super::tcp::tcp_settings();
    let mut builder =
        SentinelClientBuilder::new(addrs, &parsed.service, SentinelServerType::Master)
            .map_err(|e| invalid(e.to_string()))?
            .set_client_to_redis_db(master.redis_settings().db())
            .set_client_to_redis_tcp_settings(tcp.clone())
            .set_client_to_sentinel_tcp_settings(tcp);
    if let Some(user) = master.redis_settings().username() {
        builder = builder.set_client_to_redis_username(user);
    }
    if let Some(password) = master.redis_settings().password() {
        builder = builder.set_client_to_redis_password(password);
    }
    if let Some(password) = std::env::var(SENTINEL_PASSWORD_ENV)
        .ok()
        .filter(|p| !p.is_empty())
    {
        builder = builder.set_client_to_sentinel_password(password);
    }
    if parsed.tls {
        install_crypto_provider();
        builder = builder.set_client_to_redis_tls_mode(TlsMode::Secure);
        if !tls.is_empty() {
            let certificates = load_certificates(tls)?;
            builder = builder
                .set_client_to_redis_certificates(certificates.clone())
                .set_client_to_sentinel_certificates(certificates);
        }
    }
    let client = builder.build().map_err(|e| invalid(e.to_string()))?;
    // `parse` refuses a URL without a sentinel, so there is a first one.
    let first = infos[0].clone();
    Ok((
        Sentinels {
            client: Arc::new(tokio::sync::Mutex::new(client)),
            shown_url: redact(url),
        },
        first,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_names_sentinels_a_service_credentials_and_a_database() {
        let parsed =
            SentinelUrl::parse("redis+sentinel://app:s%40cret@h1:26380,h2,[::1]/mymaster/3")
                .unwrap();
        assert_eq!(parsed.sentinels, ["h1:26380", "h2:26379", "[::1]:26379"]);
        assert_eq!(parsed.service, "mymaster");
        assert_eq!(parsed.db, 3);
        assert!(!parsed.tls);
        let master = parsed.master_info().unwrap();
        assert_eq!(master.redis_settings().username(), Some("app"));
        assert_eq!(master.redis_settings().password(), Some("s@cret"));
        assert_eq!(master.redis_settings().db(), 3);
        assert_eq!(parsed.sentinel_infos().unwrap().len(), 3);
        assert!(SentinelUrl::parse("rediss+sentinel://h1/m").unwrap().tls);
    }

    #[test]
    fn a_url_without_service_or_sentinel_or_with_a_bad_database_is_refused_with_the_reason() {
        for (url, says) in [
            ("redis+sentinel://h1:26379", "service name is missing"),
            ("redis+sentinel://h1:26379/", "service name is missing"),
            ("redis+sentinel:///mymaster", "no sentinel"),
            ("redis+sentinel://h1/mymaster/zero", "not a number"),
            ("redis+sentinel://h1/mymaster/0/x", "more than SERVICE/DB"),
        ] {
            let reason = SentinelUrl::parse(url).unwrap_err();
            assert!(reason.contains(says), "{url}: {reason}");
        }
    }

    #[test]
    fn the_password_is_redacted_and_the_rest_kept() {
        assert_eq!(
            redact("redis+sentinel://app:hunter2@h1:26379,h2:26379/mymaster/1"),
            "redis+sentinel://app:***@h1:26379,h2:26379/mymaster/1"
        );
        assert_eq!(
            redact("redis+sentinel://:hunter2@h1/m"),
            "redis+sentinel://:***@h1/m"
        );
        assert_eq!(redact("redis+sentinel://h1/m"), "redis+sentinel://h1/m");
    }

    #[test]
    fn only_the_sentinel_schemes_are_sentinel_urls() {
        assert!(is_sentinel_url("redis+sentinel://h1/m"));
        assert!(is_sentinel_url("REDISS+SENTINEL://h1/m"));
        assert!(!is_sentinel_url("redis://h1:6379"));
        assert!(!is_sentinel_url("redis://a:1,redis://b:2"));
    }
}
