//! The TLS files a `rediss://` connection uses, read from the caller or from the environment,
//! and the certificates they hold. A leaf of the transport: the plain URL ([`super::endpoint`])
//! and Sentinel ([`super::sentinel`]) both read them.

use crate::error::{Error, Result};
use redis::{ConnectionAddr, ConnectionInfo, TlsCertificates};
use std::path::{Path, PathBuf};

/// The environment variable with a PEM file of the CA that signed the server's certificate,
/// used instead of the system's roots.
pub const CA_CERT_ENV: &str = "GATOR_REDIS_CA_CERT";
/// The environment variable with a PEM client certificate, for mutual TLS.
pub const CLIENT_CERT_ENV: &str = "GATOR_REDIS_CLIENT_CERT";
/// The environment variable with the PEM private key of the client certificate.
pub const CLIENT_KEY_ENV: &str = "GATOR_REDIS_CLIENT_KEY";

/// The TLS files a `rediss://` connection uses. Every field left unset is read from its
/// environment variable when the connection is made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// A PEM file of the CA(s) to verify the server against, instead of the system's roots.
    pub ca_cert: Option<PathBuf>,
    /// A PEM client certificate (chain), for servers that ask for one (mutual TLS).
    pub client_cert: Option<PathBuf>,
    /// The PEM private key of `client_cert`.
    pub client_key: Option<PathBuf>,
}

impl TlsFiles {
    /// These files, with each one left unset taken from its environment variable
    /// ([`CA_CERT_ENV`], [`CLIENT_CERT_ENV`], [`CLIENT_KEY_ENV`]).
    pub fn or_from_env(self) -> TlsFiles {
        let env = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        TlsFiles {
            ca_cert: self.ca_cert.or_else(|| env(CA_CERT_ENV)),
            client_cert: self.client_cert.or_else(|| env(CLIENT_CERT_ENV)),
            client_key: self.client_key.or_else(|| env(CLIENT_KEY_ENV)),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ca_cert.is_none() && self.client_cert.is_none() && self.client_key.is_none()
    }
}

/// The certificates `tls` names, read.
pub(super) fn load_certificates(tls: &TlsFiles) -> Result<TlsCertificates> {
    let client_tls = match (&tls.client_cert, &tls.client_key) {
        (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
            client_cert: read(cert, "client certificate")?,
            client_key: read(key, "client key")?,
        }),
        (None, None) => None,
        _ => {
            return Err(Error::Tls {
                reason: format!(
                    "mutual TLS needs both a client certificate and its key ({CLIENT_CERT_ENV} and {CLIENT_KEY_ENV}); only one was given"
                ),
            });
        }
    };
    let root_cert = tls
        .ca_cert
        .as_deref()
        .map(|path| read(path, "CA certificate"))
        .transpose()?;
    Ok(TlsCertificates {
        client_tls,
        root_cert,
    })
}

/// Whether `info` connects with TLS.
pub(super) fn is_tls(info: &ConnectionInfo) -> bool {
    matches!(info.addr(), ConnectionAddr::TcpTls { .. })
}

/// Installs ring as rustls's process-wide crypto provider, unless one is already: rustls picks
/// one on its own only when exactly one is compiled in, and an application may compile in
/// another. An application that installed its own keeps it.
pub(super) fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Fails only if another thread installed one meanwhile, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::Tls {
        reason: format!("could not read the {what} {}: {e}", path.display()),
    })
}

pub(super) fn describe(tls: &TlsFiles) -> String {
    [
        ("CA certificate", &tls.ca_cert),
        ("client certificate", &tls.client_cert),
        ("client key", &tls.client_key),
    ]
    .iter()
    .filter_map(|(what, path)| path.as_ref().map(|p| format!("{what} {}", p.display())))
    .collect::<Vec<_>>()
    .join(", ")
}
