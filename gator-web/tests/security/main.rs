//! The dashboard's and the worker's shields (issue 29), each proved against the real
//! `gator-web` binary over real TCP, or against the router or an in-process worker where an
//! embedder's view is the point, with a real redis-server behind it. One module per concern
//! (items 1 to 7 of the issue); `common` starts the binary and speaks raw HTTP/1.1, `jobs` and
//! `logs` are what the workers run and log. Run with `cargo test -p gator-web --test security`.
#![allow(clippy::unwrap_used)]

mod actions;
mod auth;
mod bounds;
mod broken;
mod common;
mod connections;
mod deep;
mod durable;
mod global_keys;
mod inputs;
mod jobs;
mod logs;
mod names;
mod payloads;
mod rebinding;
