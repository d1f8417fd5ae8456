//! The dashboard's shields (issue 29), each proved against the real `gator-web` binary over
//! real TCP, or against the router where an embedder's view is the point, with a real
//! redis-server behind it. One module per concern; `common` starts the binary and speaks raw
//! HTTP/1.1. Run with `cargo test -p gator-web --test security`.
#![allow(clippy::unwrap_used)]

mod auth;
mod common;
mod connections;
mod rebinding;
