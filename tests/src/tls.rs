//! A `redis-server` that speaks TLS, with certificates made for the test: a private CA that
//! signed the server's certificate (for `localhost` and 127.0.0.1) and a client certificate,
//! and a second CA that signed nothing, to show a wrong CA failing.

use crate::{RedisServer, ServerOptions, free_port};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// PEM files written to a temp dir that lives as long as this value.
#[derive(Debug)]
pub struct TestCerts {
    dir: TempDir,
}

impl TestCerts {
    /// Makes the CA, the server and client certificates, and the unrelated CA.
    ///
    /// # Panics
    /// If a certificate cannot be made or written.
    pub fn generate() -> TestCerts {
        let dir = tempfile::Builder::new()
            .prefix("gator-certs-")
            .tempdir()
            .expect("a temp dir for the certificates");
        let ca = ca("Gator test CA");
        write(dir.path(), "ca.pem", &ca.pem());
        let other = ca_params("Some other CA");
        let other_key = KeyPair::generate().expect("a key");
        let other = other.self_signed(&other_key).expect("the other CA");
        write(dir.path(), "other-ca.pem", &other.pem());

        let (cert, key) = leaf(&ca, "localhost", ExtendedKeyUsagePurpose::ServerAuth);
        write(dir.path(), "server.pem", &cert);
        write(dir.path(), "server.key", &key);
        let (cert, key) = leaf(&ca, "gator-client", ExtendedKeyUsagePurpose::ClientAuth);
        write(dir.path(), "client.pem", &cert);
        write(dir.path(), "client.key", &key);
        TestCerts { dir }
    }

    /// The CA that signed the server's and the client's certificates.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A CA that signed neither.
    pub fn other_ca(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    /// The client certificate, for mutual TLS.
    pub fn client_cert(&self) -> PathBuf {
        self.dir.path().join("client.pem")
    }

    /// Its key.
    pub fn client_key(&self) -> PathBuf {
        self.dir.path().join("client.key")
    }

    pub(crate) fn file(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn ca_params(name: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let key = KeyPair::generate().expect("a key");
    CertifiedIssuer::self_signed(ca_params(name), key).expect("a CA certificate")
}

/// A certificate for `name` (and 127.0.0.1) signed by `ca`, and its key, in PEM.
fn leaf(
    ca: &CertifiedIssuer<'static, KeyPair>,
    name: &str,
    usage: ExtendedKeyUsagePurpose,
) -> (String, String) {
    let key = KeyPair::generate().expect("a key");
    let mut params =
        CertificateParams::new(vec![name.to_owned(), "127.0.0.1".to_owned()]).expect("params");
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, ca).expect("a signed certificate");
    (cert.pem(), key.serialize_pem())
}

fn write(dir: &Path, name: &str, pem: &str) {
    std::fs::write(dir.join(name), pem).unwrap_or_else(|e| panic!("writing {name}: {e}"));
}

/// A `redis-server` with a TLS port beside its plain one (which the harness and `cli` use),
/// and an ACL user `gator` with the password `s3cret-pw`, so tests can check that no password
/// leaks into output.
#[derive(Debug)]
pub struct TlsRedis {
    /// The server; its plain port answers without a password.
    pub server: RedisServer,
    /// The certificates it was started with.
    pub certs: TestCerts,
    tls_port: u16,
}

/// The ACL user's password.
pub const TLS_PASSWORD: &str = "s3cret-pw";

impl TlsRedis {
    /// Starts one. With `client_certs`, the server asks for a client certificate signed by the
    /// test CA (mutual TLS); without, it asks for none.
    ///
    /// # Panics
    /// If redis-server cannot start with TLS (Debian's is built with it).
    pub fn start(client_certs: bool) -> TlsRedis {
        let certs = TestCerts::generate();
        let tls_port = free_port();
        let extra_args = [
            "--tls-port",
            &tls_port.to_string(),
            "--tls-cert-file",
            &certs.file("server.pem"),
            "--tls-key-file",
            &certs.file("server.key"),
            "--tls-ca-cert-file",
            &certs.file("ca.pem"),
            "--tls-auth-clients",
            if client_certs { "yes" } else { "no" },
            "--user",
            "gator",
            "on",
            &format!(">{TLS_PASSWORD}"),
            "~*",
            "&*",
            "+@all",
        ]
        .map(str::to_owned)
        .to_vec();
        let server = RedisServer::start_with(ServerOptions {
            extra_args,
            ..ServerOptions::default()
        });
        TlsRedis {
            server,
            certs,
            tls_port,
        }
    }

    /// The TLS port.
    pub fn tls_port(&self) -> u16 {
        self.tls_port
    }

    /// A PEM file of the test CA's, for a `--tls-*-file` option.
    pub(crate) fn cert_file(&self, name: &str) -> String {
        self.certs.file(name)
    }

    /// `rediss://gator:<password>@<host>:<tls port>/`; `host` is `localhost` or `127.0.0.1`.
    pub fn url(&self, host: &str) -> String {
        format!("rediss://gator:{TLS_PASSWORD}@{host}:{}/", self.tls_port)
    }
}
