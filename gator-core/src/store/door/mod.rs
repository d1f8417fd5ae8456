//! The doors to the store: a few handles, each holding its connection and key names, each with
//! a small surface for one user. Nothing outside `gator-core` reaches a room of `store`; it
//! reaches these handles (and [`crate::Admin`] for reading and repairing), and the types their
//! methods take and return, re-exported here.
//!
//! | Handle | Offers | For |
//! |---|---|---|
//! | [`Fetch`] | batch, blocking and filtered fetches; admission of controlled queues | the worker's fetcher and admission |
//! | [`Run`] | a job's set-aside payload and parents; its running record, progress, cancel marks | the worker's processor |
//! | [`Settle`] | every outcome write and the hand-offs after it | the worker's settle room alone |
//! | [`Recovery`] | every put-back; the drains that finish interrupted hand-offs | the worker's recovery and shutdown |
//! | [`Presence`] | heartbeat, queue leases, job catalogue, server identity | the worker's heartbeat, leases, catalogue, launcher |
//! | [`Upkeep`] | promote due jobs, trim finished ones, flush counters, fire cron; the reads that plan them | the worker's periodic loops |

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
pub use super::keys::{DEFAULT_NAMESPACE, Keys, validate_queue, validate_stored_queue};
pub use super::lease::{LeaseState, Recovered};
pub use super::processes::{Beat, Description};
pub use super::reply::WaitRecord;
pub use super::schedule::Promoted;
pub use super::server::Server;
pub use super::stats::Counts;
pub use super::status::{DEFAULT_RETENTION, Done, retention_ms};
