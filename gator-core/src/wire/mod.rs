//! What is stored, beside the payload ([`crate::payload`]): the names of a queue's shards and a
//! periodic entry. The bottom of the crate with the payload: the store and everything above
//! read and write these, and they import nothing above them.

pub mod cron;
pub mod shards;
