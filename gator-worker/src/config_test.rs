//! The worker's flags as `--help` and the parser see them.

use super::*;

#[test]
fn worker_ids_with_colons_and_leases_too_short_are_refused() {
    assert_eq!(parse_worker_id("pod-7.a_b"), Ok("pod-7.a_b".to_owned()));
    assert!(parse_worker_id("host:1").is_err());
    assert!(parse_worker_id("").is_err());
    assert_eq!(parse_lease("30s"), Ok(Duration::from_secs(30)));
    assert!(parse_lease("3s").is_err());
    assert!(parse_lease("soon").is_err());
}

#[test]
fn cli_help_explains_every_flag() {
    use clap::CommandFactory;
    let help = Cli::command().render_long_help().to_string();
    for flag in [
        "--queues",
        "--concurrency",
        "--redis-url",
        "--namespace",
        "--shutdown-timeout",
        "--poll-interval",
        "--dead-max-jobs",
        "--dead-max-age",
        "--lease",
        "--worker-id",
        "--redis-ca-cert",
        "--redis-client-cert",
        "--wait-replicas",
        "--wait-timeout",
        "--metrics-bind",
        "--scaling-target-latency",
    ] {
        assert!(
            help.contains(flag),
            "--help does not mention {flag}:\n{help}"
        );
    }
    #[cfg(feature = "postgres")]
    for flag in ["--outbox", "--outbox-batch"] {
        assert!(help.contains(flag), "--help does not mention {flag}");
    }
    #[cfg(not(feature = "postgres"))]
    assert!(
        !help.contains("--outbox"),
        "--help shows a flag this build refuses"
    );
}
