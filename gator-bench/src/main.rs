//! `gator-bench MODE N`: Gator's figures against the Redis at `REDIS_URL`, one `RESULT {json}`
//! line per measurement in the shape `../shared/peers-bench/run-all` reads, so Gator runs side
//! by side with Sidekiq, BullMQ and the rest.
//!
//! Modes: `single`, `bulk`, `concurrent` (enqueue rates); `process` (N queued jobs through a
//! worker at concurrency 10); `latency-worker` + `latency-enqueue` (end-to-end latency, run as
//! two processes); `backlog` (process rate with 5k, 50k, 500k and 5M jobs queued).
//!
//! Example: `cargo run --release -p gator-bench -- process 50000`.

mod measure;
mod modes;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!(
            "usage: gator-bench MODE N\n  MODE: single | bulk | concurrent | process | latency-worker | latency-enqueue | backlog\n  reads REDIS_URL (default redis://127.0.0.1:6379); latency-worker creates READY_FILE once it waits"
        );
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("gator-bench: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(modes::run(mode, n)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gator-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
