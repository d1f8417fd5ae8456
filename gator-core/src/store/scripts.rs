//! One `redis::Script` per file in `lua/`. redis-rs sends EVALSHA and loads the script after a
//! NOSCRIPT reply (a restarted server, another cluster node), so no SHA cache is kept here.

use redis::Script;
use std::sync::LazyLock;

/// `lua/promote_due.lua`: move due jobs from a scheduled or retry set to the queue.
pub static PROMOTE_DUE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/promote_due.lua")));

/// `lua/kill.lua`: add a job to the dead set and trim it.
pub static KILL: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/kill.lua")));

/// `lua/move_to_queue.lua`: move one entry of a set back to its queue.
pub static MOVE_TO_QUEUE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/move_to_queue.lua")));

/// `lua/chain_advance.lua`: enqueue a chain's next step after a success.
pub static CHAIN_ADVANCE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/chain_advance.lua")));

/// Every script file with its text, for the wire-format doc test.
pub const ALL: &[(&str, &str)] = &[
    ("promote_due.lua", include_str!("lua/promote_due.lua")),
    ("kill.lua", include_str!("lua/kill.lua")),
    ("move_to_queue.lua", include_str!("lua/move_to_queue.lua")),
    ("chain_advance.lua", include_str!("lua/chain_advance.lua")),
];
