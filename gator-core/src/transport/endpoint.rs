//! Where a client connects: a Redis URL, shown only redacted, and the TLS files that go with
//! it, read from the caller or from the environment wherever a URL is.
//!
//! `rediss://` URLs connect with TLS (rustls), verifying the server's certificate against the
//! system's roots, or against a private CA given as a PEM file. A client certificate and key
//! make it mutual TLS. redis-rs's `rediss://host:port/#insecure` form skips verification.

pub use super::tls::{CA_CERT_ENV, CLIENT_CERT_ENV, CLIENT_KEY_ENV, TlsFiles};

use super::tls::{describe, install_crypto_provider, is_tls, load_certificates};
use crate::error::{Error, Result};
use redis::{ConnectionInfo, IntoConnectionInfo};

/// The environment variable with the Redis URL (`redis://` or `rediss://`).
pub const REDIS_URL_ENV: &str = "GATOR_REDIS_URL";
/// `url` with its password replaced by `***`, for logs, errors and `Debug` output:
/// `redis://user:***@host:6379/0`. A URL that does not parse is not shown at all, since the
/// secret in it cannot be found.
pub fn redact(url: &str) -> String {
    if super::sentinel::is_sentinel_url(url) {
        return super::sentinel::redact(url);
    }
    if url.contains(',') {
        // The cluster form: each node's URL, redacted.
        return url
            .split(',')
            .map(|one| redact(one.trim()))
            .collect::<Vec<_>>()
            .join(",");
    }
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                // Only fails for URLs that cannot have a password, which this one has.
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        Err(_) => "(a Redis URL that does not parse)".to_owned(),
    }
}

/// Where a client connects: one server, or a Redis Cluster.
// Made once per `Client` and taken apart at once: boxing the larger variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub(crate) enum Target {
    /// One server (or a proxy in front of one).
    Single(redis::Client),
    /// A cluster, found from its seed nodes.
    #[cfg(feature = "cluster")]
    Cluster(redis::cluster::ClusterClient),
    /// A master named by its sentinels, found again after each failover.
    Sentinel(super::sentinel::Sentinels),
}

/// The environment variable that makes a single URL a cluster seed (`1` or `true`).
pub const CLUSTER_ENV: &str = "GATOR_REDIS_CLUSTER";

/// Whether `GATOR_REDIS_CLUSTER` asks for a cluster.
pub(crate) fn cluster_from_env() -> bool {
    std::env::var(CLUSTER_ENV).is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
}

/// Whether `url` names a cluster by itself: several comma-separated node URLs (a Sentinel URL
/// lists several sentinels of one master, and is not one).
pub fn is_cluster_url(url: &str) -> bool {
    !super::sentinel::is_sentinel_url(url)
        && url
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .count()
            > 1
}

/// The redis-rs client for `url`, with `tls`'s files loaded when it is `rediss://`. Several
/// comma-separated URLs, or `cluster`, make a cluster client seeded by them; a
/// `redis+sentinel://` URL, the sentinels of a master. Returns the first node's (or
/// sentinel's) connection info too.
pub(crate) fn open_target(
    url: &str,
    cluster: bool,
    tls: &TlsFiles,
) -> Result<(Target, ConnectionInfo)> {
    if super::sentinel::is_sentinel_url(url) {
        if cluster {
            return Err(Error::InvalidUrl {
                url: redact(url),
                reason: "a Sentinel URL names one master, not a Redis Cluster: \
                         leave out --redis-cluster (GATOR_REDIS_CLUSTER)"
                    .to_owned(),
            });
        }
        let (sentinels, info) = super::sentinel::open(url, tls)?;
        return Ok((Target::Sentinel(sentinels), info));
    }
    if !cluster && !is_cluster_url(url) {
        let (client, info) = open(url, tls)?;
        return Ok((Target::Single(client), info));
    }
    open_cluster(url, tls)
}

/// A build without the `cluster` feature cannot talk to a cluster: say so and how to fix it.
#[cfg(not(feature = "cluster"))]
fn open_cluster(url: &str, _tls: &TlsFiles) -> Result<(Target, ConnectionInfo)> {
    Err(Error::InvalidUrl {
        url: redact(url),
        reason: "this names a Redis Cluster, and this build of Gator has no cluster support: \
                 enable the `cluster` feature of gator-worker, gator-web or gator-core"
            .to_owned(),
    })
}

#[cfg(feature = "cluster")]
fn open_cluster(url: &str, tls: &TlsFiles) -> Result<(Target, ConnectionInfo)> {
    let infos = url
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|node| node_info(node, tls))
        .collect::<Result<Vec<_>>>()?;
    let first = infos.first().cloned().ok_or_else(|| Error::InvalidUrl {
        url: redact(url),
        reason: "no node URL was given".to_owned(),
    })?;
    let mut builder =
        redis::cluster::ClusterClientBuilder::new(infos).tcp_settings(super::tcp::tcp_settings());
    if !tls.is_empty() {
        builder = builder.certs(load_certificates(tls)?);
    }
    let client = builder.build().map_err(|e| Error::InvalidUrl {
        url: redact(url),
        reason: e.to_string(),
    })?;
    Ok((Target::Cluster(client), first))
}

/// The redis-rs client for `url`, with `tls`'s files loaded when the URL is `rediss://`.
/// Refuses TLS files for a URL that would not use them, so that a plain-text connection is
/// never made by mistake.
pub(crate) fn open(url: &str, tls: &TlsFiles) -> Result<(redis::Client, ConnectionInfo)> {
    let info = node_info(url, tls)?;
    if tls.is_empty() {
        let client = redis::Client::open(info.clone())?;
        return Ok((client, info));
    }
    let certificates = load_certificates(tls)?;
    let client =
        redis::Client::build_with_tls(info.clone(), certificates).map_err(|e| Error::Tls {
            reason: format!("the TLS files could not be used: {e}"),
        })?;
    let info = client.get_connection_info().clone();
    Ok((client, info))
}

/// `url` parsed, with Gator's TCP settings; refuses TLS files for a URL that would not use
/// them, so that a plain-text connection is never made by mistake, and readies rustls for one
/// that does.
fn node_info(url: &str, tls: &TlsFiles) -> Result<ConnectionInfo> {
    check_scheme(url)?;
    let info = url
        .into_connection_info()
        .map_err(|e| Error::InvalidUrl {
            url: redact(url),
            reason: e.to_string(),
        })?
        .set_tcp_settings(super::tcp::tcp_settings());
    if !is_tls(&info) && !tls.is_empty() {
        return Err(Error::Tls {
            reason: format!(
                "TLS files were given ({}), but {} does not use TLS: write rediss:// to connect with TLS",
                describe(tls),
                redact(url)
            ),
        });
    }
    if is_tls(&info) {
        install_crypto_provider();
    }
    Ok(info)
}

/// The schemes a Redis URL may have (redis-rs's).
const SCHEMES: [&str; 6] = ["redis", "rediss", "redis+unix", "unix", "valkey", "valkeys"];

/// Refuses a URL without a scheme (`127.0.0.1:6379`) or with one that is not Redis's
/// (`http://…`), saying what to write instead; the URL shown redacted.
fn check_scheme(url: &str) -> Result<()> {
    let Some((scheme, rest)) = url.split_once("://") else {
        let shown = redact(&format!("redis://{url}"));
        return Err(Error::InvalidUrl {
            url: shown.trim_start_matches("redis://").to_owned(),
            reason: format!(
                "it has no scheme: write {shown} (rediss:// for TLS, redis+sentinel:// for Sentinel)"
            ),
        });
    };
    if SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
        return Ok(());
    }
    let shown = redact(&format!("redis://{rest}"));
    Err(Error::InvalidUrl {
        url: redact(url),
        reason: format!(
            "{scheme}:// is not a Redis URL scheme: write {shown} (rediss:// for TLS, redis+sentinel:// for Sentinel)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("redis://user:s3cret@cache.internal:6380/2"),
            "redis://user:***@cache.internal:6380/2"
        );
        assert_eq!(
            redact("rediss://:token@cache.internal:6380"),
            "rediss://:***@cache.internal:6380"
        );
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert!(!redact("redis//:s3cret@oops").contains("s3cret"));
        assert!(!redact("rediss+sentinel://u:hunter2@h1,h2/m").contains("hunter2"));
    }

    #[test]
    fn tls_files_for_a_plain_url_are_refused() {
        let tls = TlsFiles {
            ca_cert: Some("/tmp/ca.pem".into()),
            ..TlsFiles::default()
        };
        let err = open("redis://:pw@127.0.0.1:1", &tls)
            .expect_err("a CA file with redis:// must be refused");
        let text = err.to_string();
        assert!(text.contains("rediss://"), "{text}");
        assert!(!text.contains("pw@"), "{text}");
    }

    #[test]
    fn a_missing_ca_file_is_named() {
        let tls = TlsFiles {
            ca_cert: Some("/nonexistent/ca.pem".into()),
            ..TlsFiles::default()
        };
        let err =
            open("rediss://127.0.0.1:1", &tls).expect_err("a missing CA file must be refused");
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }
}
