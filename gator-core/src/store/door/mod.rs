//! The doors to the store: the handles (a file each) and the types their methods take and
//! return, re-exported from `store` (whose docs list who may use which). Nothing outside
//! `gator-core` reaches a room of `store` but through them.

mod fetch;
mod presence;
mod recovery;
mod run;
mod settle;
mod upkeep;

pub use fetch::Fetch;
pub use presence::Presence;
pub use recovery::Recovery;
pub use run::Run;
pub use settle::Settle;
pub use upkeep::Upkeep;

pub use super::ack::{Ack, Acked, MAX_ACKS, MAX_TAKE};
pub use super::admit::{
    AdmitRequest, Admitted, MAX_ACKS as MAX_ADMIT_ACKS, NextLook, SharedStart, WindowInterval,
};
pub use super::broken::{BrokenKey, LOG_EVERY};
pub use super::cancel::CANCEL_POLL;
pub use super::catalogue::Published;
pub use super::cron::{Fire, StoredEntry};
pub use super::dead::DeadCap;
pub use super::expiry::Judged;
pub use super::fetched::{Batch, Fetched, Killed, MAX_BATCH, Verdict};
pub use super::finished::DEFAULT_KEEP;
pub use super::flow_status::{FlowStatus, Parked, RateStatus};
pub use super::inflight::LEASED_TAKE;
pub use super::keys::{DEFAULT_NAMESPACE, Keys, validate_queue, validate_stored_queue};
pub use super::lease::{LeaseState, Recovered};
pub use super::processes::{Beat, Description};
pub use super::reply::WaitRecord;
pub use super::schedule::Promoted;
pub use super::server::Server;
pub use super::stats::Counts;
pub use super::status::{DEFAULT_RETENTION, Done, retention_ms};
