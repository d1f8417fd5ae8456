//! The admin subcommands of `gator-worker` (`dead list`, `queue pause`, `stats` ...): inspect
//! and repair the fleet's sets and settings instead of running the worker. Behind the `cli`
//! feature (on by default), so an application that embeds a worker need not compile them.

pub mod admin;
pub mod cron;
pub mod fleet;
pub mod flow;
pub mod job;
pub mod shards;
pub mod table;
