//! How a client reaches Redis: its URL and TLS files ([`endpoint`]), the connections
//! ([`connection`]), a master found through Sentinel ([`sentinel`]), and waiting for replicas
//! ([`replication`]). Below the store, which talks through them.

pub mod connection;
pub mod endpoint;
mod open;
pub mod replication;
pub mod sentinel;
mod tcp;
mod tls;
