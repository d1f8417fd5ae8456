//! `gator-web`: the dashboard and HTTP API as a program of its own.
//!
//! ```text
//! gator-web --redis-url redis://127.0.0.1:6379 --bind 127.0.0.1:9090
//! GATOR_WEB_TOKEN=s3cret gator-web --bind 0.0.0.0:9090
//! ```
//!
//! It refuses to listen on an address other than loopback without `--auth-token` or
//! `--basic-auth` (exit status 2), unless told `--insecure-no-auth` (something in front of it
//! authenticates).

use clap::Parser;
use gator_web::{BasicAuth, WebConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// The command line.
#[derive(Parser)]
#[command(
    name = "gator-web",
    version,
    about = "Gator's web dashboard and HTTP API",
    long_about = "Serves Gator's web dashboard (overview, queues, busy, scheduled, retries, dead, \
        job, workflows, cron, limits, search) and its JSON HTTP API.\n\n\
        It binds to 127.0.0.1:9090 by default, and refuses a non-loopback address without \
        --auth-token or --basic-auth unless given --insecure-no-auth."
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

    /// Require this bearer token: `Authorization: Bearer <token>`, or in a browser open the
    /// dashboard once with `?token=<token>` (it sets a cookie).
    #[arg(long, env = "GATOR_WEB_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,

    /// Require HTTP basic auth with this `user:password`.
    #[arg(
        long,
        env = "GATOR_WEB_BASIC_AUTH",
        value_name = "USER:PASSWORD",
        hide_env_values = true
    )]
    basic_auth: Option<BasicAuth>,

    /// Listen on a non-loopback address without auth (only behind something that
    /// authenticates).
    #[arg(long)]
    insecure_no_auth: bool,

    /// Show everything, change nothing: every POST answers 403 and the pages hide the buttons.
    #[arg(long, env = "GATOR_WEB_READ_ONLY")]
    read_only: bool,
}

impl Cli {
    fn config(&self) -> WebConfig {
        WebConfig {
            auth_token: self.auth_token.clone().filter(|t| !t.is_empty()),
            basic_auth: self.basic_auth.clone(),
            read_only: self.read_only,
        }
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
    if !cli.bind.ip().is_loopback() && !config.has_auth() && !cli.insecure_no_auth {
        eprintln!(
            "error: refusing to listen on {} without authentication: anyone who can reach it could \
             retry, delete and enqueue jobs. Give --auth-token (GATOR_WEB_TOKEN) or --basic-auth \
             (GATOR_WEB_BASIC_AUTH), bind to 127.0.0.1, or pass --insecure-no-auth if something in \
             front of gator-web authenticates.",
            cli.bind
        );
        return ExitCode::from(2);
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
    tracing::info!(
        address = %address,
        redis = client.redacted_url(),
        auth = config.has_auth(),
        read_only = config.read_only,
        "gator-web listening"
    );
    // A line on stdout a script (or a test) can wait for, with the port actually bound.
    println!("gator-web listening on http://{address}/");
    axum::serve(listener, gator_web::router(client, config))
        .with_graceful_shutdown(shutdown())
        .await?;
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
    fn help_explains_every_flag_and_an_empty_token_is_no_token() {
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
        ] {
            assert!(help.contains(flag), "--help does not mention {flag}");
        }
        let cli = Cli::try_parse_from(["gator-web", "--auth-token", ""]).expect("parses");
        assert!(!cli.config().has_auth());
        let cli = Cli::try_parse_from(["gator-web", "--basic-auth", "ops:pw", "--read-only"])
            .expect("parses");
        assert!(cli.config().has_auth() && cli.config().read_only);
        assert!(Cli::try_parse_from(["gator-web", "--basic-auth", "nopassword"]).is_err());
        assert!(Cli::try_parse_from(["gator-web", "--bind", "localhost:80"]).is_err());
    }
}
