//! What is stored, beside the payload ([`crate::payload`]): the names of a queue's shards, a
//! periodic entry, job ids and the queued mark each names, and the states of a job's status record with every transition between them. The bottom of the crate with the payload: the store and everything above
//! read and write these, and they import nothing above them.

pub mod cron;
pub mod durable;
pub mod jid;
pub mod lifecycle;
pub mod shards;
