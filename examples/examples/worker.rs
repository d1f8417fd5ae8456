//! The shop's worker binary: the three lines every Gator app writes, plus the `use` that links
//! the crate defining the jobs.
//!
//! Run: `cargo run -p gator-examples --example worker -- --queues high:3,default:1`

use gator_examples as _; // links the #[job]s so the worker knows them

fn main() -> std::process::ExitCode {
    gator::main()
}
