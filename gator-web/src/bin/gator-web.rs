//! `gator-web`: the dashboard and HTTP API as a program of its own.
//!
//! ```text
//! gator-web --redis-url redis://127.0.0.1:6379 --bind 127.0.0.1:9090
//! GATOR_WEB_TOKEN=$(head -c 24 /dev/urandom | base64) gator-web --bind 0.0.0.0:9090 \
//!     --allowed-host gator.example.com
//! ```
//!
//! At start, in order, each refusal exiting with status 2 and the reason on stderr:
//!
//! 1. a weak token or basic-auth password is refused (shorter than 16 characters, blank, fewer
//!    than 6 different characters, one of them more than half, a piece repeated, or mostly
//!    runs or sequences: `gator_web::WebConfig::validate`), and so is a malformed
//!    `--allowed-host`, a zero limit, or a body timeout not shorter than the request timeout;
//! 2. an address other than loopback is refused without `--auth-token` or `--basic-auth`,
//!    unless told `--insecure-no-auth` (something in front of it authenticates), which is
//!    then logged as a warning;
//! 3. once bound, the address actually bound (port 0 made concrete) joins the allowed hosts,
//!    and it serves with `gator_web::serve`: header and write timeouts, the connection caps
//!    (in all and per client), the pipeline cap, peer addresses for the auth throttle.

use clap::Parser;
use gator_web::{BasicAuth, ServeLimits, WebConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The command line.
#[derive(Parser)]
#[command(
    name = "gator-web",
    version,
    about = "Gator's web dashboard and HTTP API",
    long_about = "Serves Gator's web dashboard (overview, queues, busy, scheduled, retries, dead, \
        job, workflows, cron, limits, search) and its JSON HTTP API.\n\n\
        It binds to 127.0.0.1:9090 by default, and refuses a non-loopback address without \
        --auth-token or --basic-auth unless given --insecure-no-auth. A token or basic-auth \
        password must have at least 16 characters, at least 6 different ones, none of them more \
        than half, and be neither a piece repeated nor mostly runs or sequences (aaaa, abcd, \
        1234): head -c 24 /dev/urandom | base64 makes one. Without auth it answers only requests \
        addressed to localhost, 127.0.0.1, [::1] or the bound address (DNS rebinding); \
        --allowed-host adds names, and once given is enforced with auth too."
)]
struct Cli {
    /// The Redis Gator uses: `redis://host:port/db` (`rediss://` for TLS), a Redis Cluster as
    /// comma-separated node URLs, or a master found by its sentinels as
    /// `redis+sentinel://host:26379,host2:26379/SERVICE`.
    #[arg(long, env = "GATOR_REDIS_URL", default_value = gator_core::client::DEFAULT_REDIS_URL)]
    redis_url: String,

    /// Treat a single --redis-url as the seed of a Redis Cluster (several comma-separated URLs
    /// are a cluster without it).
    #[arg(long, env = "GATOR_REDIS_CLUSTER", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    redis_cluster: bool,

    /// A PEM file of the CA(s) that signed a `rediss://` server's certificate, instead of the
    /// system's roots.
    #[arg(long, env = "GATOR_REDIS_CA_CERT", value_name = "FILE")]
    redis_ca_cert: Option<PathBuf>,

    /// A PEM client certificate to present to a `rediss://` server (mutual TLS); needs
    /// --redis-client-key.
    #[arg(
        long,
        env = "GATOR_REDIS_CLIENT_CERT",
        value_name = "FILE",
        requires = "redis_client_key"
    )]
    redis_client_cert: Option<PathBuf>,

    /// The PEM private key of --redis-client-cert.
    #[arg(
        long,
        env = "GATOR_REDIS_CLIENT_KEY",
        value_name = "FILE",
        requires = "redis_client_cert"
    )]
    redis_client_key: Option<PathBuf>,

    /// Prefix of every Redis key; must match the workers'.
    #[arg(long, env = "GATOR_NAMESPACE", default_value = "gator")]
    namespace: String,

    /// The address to listen on.
    #[arg(long, env = "GATOR_WEB_BIND", default_value = "127.0.0.1:9090")]
    bind: SocketAddr,

    /// Require this bearer token (at least 16 characters, 6 different, not repetitive):
    /// `Authorization: Bearer <token>`, or in a browser open the dashboard once with
    /// `?token=<token>` (it sets a session cookie).
    #[arg(long, env = "GATOR_WEB_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,

    /// Require HTTP basic auth with this `user:password` (a password as strong as a token).
    #[arg(
        long,
        env = "GATOR_WEB_BASIC_AUTH",
        value_name = "USER:PASSWORD",
        hide_env_values = true
    )]
    basic_auth: Option<BasicAuth>,

    /// Listen on a non-loopback address without auth (only behind something that
    /// authenticates); logged as a warning.
    #[arg(long)]
    insecure_no_auth: bool,

    /// Show everything, change nothing: every POST answers 403 and the pages hide the buttons.
    #[arg(long, env = "GATOR_WEB_READ_ONLY")]
    read_only: bool,

    /// Also answer requests addressed to this host (`name`, `name:port`, `10.0.0.5:9090`; no
    /// port: any port), e.g. the name a proxy in front serves. Repeatable, or a comma-separated
    /// list in the env variable (flags, if any, replace it). Once given, it is enforced with
    /// auth too.
    #[arg(
        long = "allowed-host",
        env = "GATOR_WEB_ALLOWED_HOSTS",
        value_name = "HOST",
        value_delimiter = ','
    )]
    allowed_hosts: Vec<String>,

    /// Mark the session cookie `Secure` (it already is when a proxy says
    /// `X-Forwarded-Proto: https`).
    #[arg(long, env = "GATOR_WEB_SECURE_COOKIES")]
    secure_cookies: bool,

    /// How long a browser login (`?token=`) lasts, at most 30 days.
    #[arg(long, env = "GATOR_WEB_SESSION_TTL", value_name = "DURATION", default_value = "12h", value_parser = humantime::parse_duration)]
    session_ttl: Duration,

    /// How long a request's head may take to arrive, and a keep-alive connection may sit idle.
    #[arg(long, env = "GATOR_WEB_HEADER_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    header_timeout: Duration,

    /// How long a request body may take to arrive, in all (408 past it); shorter than
    /// --request-timeout.
    #[arg(long, env = "GATOR_WEB_BODY_TIMEOUT", value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    body_timeout: Duration,

    /// How long a request may take, head to answer (503 `timeout` past it).
    #[arg(long, env = "GATOR_WEB_REQUEST_TIMEOUT", value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    request_timeout: Duration,

    /// The largest request body taken; a longer `Content-Length` is answered 413 at once.
    #[arg(long, env = "GATOR_WEB_MAX_BODY_BYTES", value_name = "BYTES", default_value_t = gator_web::DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,

    /// The most connections open at once; past it a new one is closed at once.
    #[arg(long, env = "GATOR_WEB_MAX_CONNECTIONS", value_name = "N", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,

    /// The most connections one client (an IPv4 address, an IPv6 /64) holds; past it, new ones
    /// are closed at once. Behind a proxy every client is the proxy: raise it to --max-connections.
    #[arg(long, env = "GATOR_WEB_MAX_CONNECTIONS_PER_CLIENT", value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections_per_client: u32,

    /// How long a write of an answer may wait for the client to read before the connection is
    /// closed (a client that asks and never reads).
    #[arg(long, env = "GATOR_WEB_WRITE_TIMEOUT", value_name = "DURATION", default_value = "30s", value_parser = humantime::parse_duration)]
    write_timeout: Duration,

    /// The kernel's send buffer of each connection, in bytes: what a client that does not read
    /// can pin; answers go out at most this much per round trip.
    #[arg(long, env = "GATOR_WEB_SEND_BUFFER_BYTES", value_name = "BYTES", default_value_t = 65536, value_parser = clap::value_parser!(u32).range(4096..))]
    send_buffer_bytes: u32,

    /// The most requests answered in a row on one connection without the client waiting for
    /// them (HTTP pipelining); the last says `Connection: close` and the connection ends.
    #[arg(long, env = "GATOR_WEB_MAX_PIPELINED_REQUESTS", value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    max_pipelined_requests: u32,
}

impl Cli {
    fn config(&self) -> WebConfig {
        WebConfig {
            auth_token: self.auth_token.clone(),
            basic_auth: self.basic_auth.clone(),
            read_only: self.read_only,
            ..WebConfig::new()
        }
        .allowed_hosts(self.allowed_hosts.iter().map(|h| h.trim().to_owned()))
        .secure_cookies(self.secure_cookies)
        .session_ttl(self.session_ttl)
        .max_body_bytes(self.max_body_bytes)
        .timeouts(self.body_timeout, self.request_timeout)
    }

    fn limits(&self) -> ServeLimits {
        ServeLimits {
            header_timeout: self.header_timeout,
            write_timeout: self.write_timeout,
            send_buffer_bytes: self.send_buffer_bytes as usize,
            max_connections: self.max_connections as usize,
            max_connections_per_client: self.max_connections_per_client as usize,
            max_pipelined_requests: self.max_pipelined_requests as usize,
            ..ServeLimits::default()
        }
    }

    /// Steps 1 and 2 of the module docs: the reason to refuse, if any.
    fn refusal(&self, config: &WebConfig) -> Option<String> {
        if let Err(error) = config.validate() {
            return Some(format!("error: {error}"));
        }
        if let Err(error) = self.limits().validate() {
            return Some(format!("error: {error}"));
        }
        if !self.bind.ip().is_loopback() && !config.has_auth() && !self.insecure_no_auth {
            return Some(format!(
                "error: refusing to listen on {} without authentication: anyone who can reach it could \
                 retry, delete and enqueue jobs. Give --auth-token (GATOR_WEB_TOKEN) or --basic-auth \
                 (GATOR_WEB_BASIC_AUTH), bind to 127.0.0.1, or pass --insecure-no-auth if something in \
                 front of gator-web authenticates.",
                self.bind
            ));
        }
        None
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let config = cli.config();
    if let Some(reason) = cli.refusal(&config) {
        eprintln!("{reason}");
        return ExitCode::from(2);
    }
    if cli.insecure_no_auth && !config.has_auth() {
        tracing::warn!(
            bind = %cli.bind,
            "--insecure-no-auth: the dashboard requires no authentication; anyone who reaches it can enqueue, retry, delete and clear jobs, so something in front of it must authenticate"
        );
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(cli, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(cli: Cli, config: WebConfig) -> Result<(), Box<dyn std::error::Error>> {
    let limits = cli.limits();
    let client = gator_core::Client::builder(cli.redis_url)
        .namespace(cli.namespace)
        .cluster(cli.redis_cluster)
        .tls(gator_core::TlsFiles {
            ca_cert: cli.redis_ca_cert,
            client_cert: cli.redis_client_cert,
            client_key: cli.redis_client_key,
        })
        .connect()
        .await?;
    let listener = tokio::net::TcpListener::bind(cli.bind)
        .await
        .map_err(|e| format!("could not listen on {}: {e}", cli.bind))?;
    let address = listener.local_addr()?;
    // Step 3: the address a browser on this machine types, port 0 made concrete.
    let config = config.bound_address(address);
    tracing::info!(
        address = %address,
        redis = client.redacted_url(),
        auth = config.has_auth(),
        read_only = config.read_only,
        allowed_hosts = ?config.allowed_hosts,
        "gator-web listening"
    );
    let router = gator_web::try_router(client, config)?;
    // A line on stdout a script (or a test) can wait for, with the port actually bound.
    println!("gator-web listening on http://{address}/");
    gator_web::serve(listener, router, limits, shutdown()).await?;
    tracing::info!("gator-web stopped");
    Ok(())
}

/// SIGINT or SIGTERM: stop accepting, finish the requests in flight, exit 0.
async fn shutdown() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_explains_every_flag_and_its_default_limits_are_serve_limits_default() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        for flag in [
            "--redis-url",
            "--redis-cluster",
            "--redis-ca-cert",
            "--redis-client-cert",
            "--redis-client-key",
            "--namespace",
            "--bind",
            "--auth-token",
            "--basic-auth",
            "--insecure-no-auth",
            "--read-only",
            "--allowed-host",
            "--secure-cookies",
            "--session-ttl",
            "--header-timeout",
            "--body-timeout",
            "--request-timeout",
            "--max-body-bytes",
            "--max-connections",
            "--max-connections-per-client",
            "--write-timeout",
            "--send-buffer-bytes",
            "--max-pipelined-requests",
            "16 characters",
            "6 different",
        ] {
            assert!(help.contains(flag), "--help does not mention {flag}");
        }
        let defaults = Cli::try_parse_from(["gator-web"]).expect("parses");
        assert_eq!(defaults.limits(), ServeLimits::default());
    }

    /// Why `args` are refused at start, if they are.
    fn refused(args: &[&str]) -> Option<String> {
        let cli = Cli::try_parse_from(args).expect("parses");
        cli.refusal(&cli.config())
    }

    #[test]
    fn weak_secrets_unsound_limits_and_malformed_flags_are_refused() {
        for weak in [
            &["gator-web", "--auth-token", ""][..],
            &["gator-web", "--auth-token", "   \t           "],
            &["gator-web", "--auth-token", "fifteen-chars-x"],
            &["gator-web", "--basic-auth", "ops:pw"],
            &["gator-web", "--auth-token", "abababababababababab"],
        ] {
            let reason = refused(weak).unwrap_or_default();
            assert!(reason.contains("too weak"), "{weak:?}: {reason}");
        }
        let late = refused(&["gator-web", "--body-timeout", "30s"]).unwrap_or_default();
        assert!(late.contains("shorter than the request timeout"), "{late}");
        let cli = Cli::try_parse_from(
            "gator-web --basic-auth ops:a-password-of-20-ch --read-only --allowed-host a.example,b.example:8443 --allowed-host c.example".split(' '),
        )
        .expect("parses");
        let config = cli.config();
        assert!(config.has_auth() && config.read_only && cli.refusal(&config).is_none());
        assert_eq!(
            config.allowed_hosts,
            ["a.example", "b.example:8443", "c.example"]
        );
        assert!(Cli::try_parse_from(["gator-web", "--basic-auth", "nopassword"]).is_err());
        assert!(Cli::try_parse_from(["gator-web", "--bind", "localhost:80"]).is_err());
        assert!(Cli::try_parse_from(["gator-web", "--max-connections", "0"]).is_err());
        assert!(Cli::try_parse_from(["gator-web", "--send-buffer-bytes", "4095"]).is_err());
        let zero = refused(&["gator-web", "--write-timeout", "0s"]).unwrap_or_default();
        assert!(zero.contains("--write-timeout"), "{zero}");
    }
}
