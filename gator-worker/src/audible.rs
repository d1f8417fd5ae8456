//! A worker that is heard. Everything a worker has to say (a job failed, Redis went away) goes
//! through `tracing`; an application that installed no subscriber heard none of it, so failed
//! jobs were invisible in an embedded worker. A worker therefore says once, on stderr, that its
//! logs go nowhere, unless the application installed a subscriber or asked the worker for its
//! own ([`crate::WorkerBuilder::log_to_stderr`]).

use std::sync::Once;
use tracing::subscriber::NoSubscriber;

/// What a worker prints, once per process, when nothing hears its logs.
pub const UNHEARD: &str = "gator-worker: no tracing subscriber is installed, so this worker's logs \
(failed jobs, Redis outages) go nowhere: install one (`tracing_subscriber::fmt::init()`), or \
call `.log_to_stderr()` on the worker builder";

/// Installs the subscriber the `gator-worker` binary uses (stderr, `RUST_LOG` or `info`, colour
/// on a terminal), unless one is installed already.
pub fn log_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // An error means the application installed its own, which wins.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Prints [`UNHEARD`] to stderr, once per process, if no subscriber hears this thread's events.
pub fn warn_if_unheard() {
    static WARNED: Once = Once::new();
    let unheard = tracing::dispatcher::get_default(|dispatch| dispatch.is::<NoSubscriber>());
    if unheard {
        WARNED.call_once(|| eprintln!("{UNHEARD}"));
    }
}
