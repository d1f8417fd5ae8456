//! Every kind of Redis key Gator uses, defined once: its name, the suffix its keys end with,
//! its Redis type and where it lives. [`super::Keys`] builds Rust's key names from these, the
//! Lua prelude's `qkey(prefix, kind, name)` is made from them ([`lua_prelude`]), and the
//! wire-format doc test checks each is documented: a new key cannot go unnamed.

use std::fmt::Write;

/// Where the keys of a kind live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `<namespace>:<suffix><name>`: one for the whole namespace.
    Global,
    /// `<namespace>:{<queue>}:<suffix><name>`: one (or one per name) in each queue's slot.
    Queue,
    /// `<namespace>:{replies}:<suffix><name>`: under the replies' one hash tag.
    Replies,
    /// `<namespace>:limiter:{<name>}:<suffix>`: under a shared rate limiter's own tag.
    Limiter,
    /// `<namespace>:{catalogue}:<suffix><name>`: the job catalogue, under its one hash tag.
    Catalogue,
}

/// A kind of key: see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// Its name, as the Lua prelude's `qkey` takes it (`held`, `units`, ...).
    pub name: &'static str,
    /// What its keys end with after the queue's tag (`held:` then the parking key).
    pub suffix: &'static str,
    /// Its Redis type: `LIST`, `ZSET`, `SET`, `HASH` or `STRING`.
    pub redis_type: &'static str,
    /// Where its keys live.
    pub scope: Scope,
}

impl Kind {
    /// Whether a key of this kind takes a name after its suffix (`held:<parking key>`).
    pub fn is_named(&self) -> bool {
        self.suffix.ends_with(':')
    }
}

macro_rules! kinds {
    ($($konst:ident = $name:literal, $suffix:literal, $ty:ident, $scope:ident;)*) => {
        $(
            #[doc = concat!("`", $suffix, "`: a ", stringify!($ty), " (", stringify!($scope), ").")]
            pub const $konst: Kind = Kind {
                name: $name,
                suffix: $suffix,
                redis_type: stringify!($ty),
                scope: Scope::$scope,
            };
        )*
        /// Every kind.
        pub const ALL: &[Kind] = &[$($konst),*];
    };
}

kinds! {
    FLOW = "flow", "flow", HASH, Queue;
    HELD = "held", "held:", ZSET, Queue;
    CRITICAL = "critical", "critical", ZSET, Queue;
    READY = "ready", "ready", ZSET, Queue;
    BLOCKED = "blocked", "blocked", SET, Queue;
    TIMED = "timed", "timed", ZSET, Queue;
    OVERLAP = "overlap", "overlap", HASH, Queue;
    OVERLAP_WAIT = "overlap_wait", "overlap_wait:", SET, Queue;
    USED = "used", "used", HASH, Queue;
    UNITS = "units", "units:", HASH, Queue;
    SEQ = "seq", "seq", STRING, Queue;
    FAIR = "fair", "fair", ZSET, Queue;
    SIGNAL = "signal", "signal", LIST, Queue;
    BACKLOG = "backlog", "backlog", LIST, Queue;
    TAT = "tat", "tat:", STRING, Queue;
    CRON_ENTRIES = "cron_entries", "cron", HASH, Queue;
    CRON_FIRED = "cron_fired", "cron_fired", HASH, Queue;
    CRON_PAUSED = "cron_paused", "cron_paused", HASH, Queue;
    QUEUE = "queue", "queue", LIST, Queue;
    INFLIGHT = "inflight", "inflight:", LIST, Queue;
    LEASES = "leases", "leases", ZSET, Queue;
    SCHEDULED = "scheduled", "scheduled", ZSET, Queue;
    LATER = "later", "later", ZSET, Queue;
    LATER_SLICE = "later_slice", "later:", LIST, Queue;
    LATER_COUNT = "later_count", "later_n", STRING, Queue;
    UNIQUE = "unique", "unique:", STRING, Queue;
    RETRY = "retry", "retry", ZSET, Queue;
    CHAIN = "chain", "chain:", LIST, Queue;
    OUTBOX = "outbox", "outbox", LIST, Queue;
    HANDOFF = "handoff", "handoff", HASH, Queue;
    HANDED = "handed", "handed:", STRING, Queue;
    RELAYED = "relayed", "relayed:", STRING, Queue;
    WORKFLOW = "workflow", "wf:", HASH, Queue;
    WORKFLOW_PUSH = "workflow_push", "wfpush:", HASH, Queue;
    WORKFLOWS_PUSHING = "workflows_pushing", "wfpushing", SET, Queue;
    CANCELLING = "cancelling", "cancelling", SET, Queue;
    STATS = "stats", "stats", HASH, Queue;
    HISTORY_MINUTES = "history_minutes", "history:m:", HASH, Queue;
    HISTORY_HOURS = "history_hours", "history:h:", HASH, Queue;
    CHAINS_INDEX = "chains_index", "chains", ZSET, Queue;
    WORKFLOWS_INDEX = "workflows_index", "workflows", ZSET, Queue;
    DEAD = "dead", "dead", ZSET, Queue;
    JOB = "job", "job:", STRING, Queue;
    PROGRESS = "progress", "progress:", STRING, Queue;
    PAYLOAD = "payload", "payload:", STRING, Queue;
    QUEUED = "queued", "queued:", HASH, Queue;
    FINISHED = "finished", "finished", LIST, Queue;
    REPLY_WAITS = "reply_waits", "waits", HASH, Replies;
    REPLY_DEADLINES = "reply_deadlines", "deadlines", ZSET, Replies;
    REPLY_EARLY = "reply_early", "early:", STRING, Replies;
    REPLY_SEEN = "reply_seen", "seen:", STRING, Replies;
    REPLY_OUTBOX = "reply_outbox", "outbox", LIST, Replies;
    REPLY_STATS = "reply_stats", "stats", HASH, Replies;
    QUEUES = "queues", "queues", SET, Global;
    PROCESSES = "processes", "processes", ZSET, Global;
    PROCESS = "process", "process:", STRING, Global;
    SHARDS = "shards", "shards", HASH, Global;
    FLOW_QUEUES = "flow_queues", "flow_queues", SET, Global;
    LIMITERS = "limiters", "limiters", SET, Global;
    CRON_INDEX = "cron_index", "cron", HASH, Global;
    RELAYS = "relays", "relays", HASH, Global;
    LIMITER_RATE = "limiter_rate", "rate", HASH, Limiter;
    LIMITER_TAT = "limiter_tat", "tat", STRING, Limiter;
    CATALOGUE_JOBS = "catalogue_jobs", "jobs", HASH, Catalogue;
    CATALOGUE_WRITERS = "catalogue_writers", "writers", HASH, Catalogue;
    CATALOGUE_RUNNERS = "catalogue_runners", "runners:", HASH, Catalogue;
}

/// What every script gets before its prelude: the per-queue kinds it names (`wanted`, by kind
/// name) as a Lua table, and `qkey(prefix, kind, name)`, which builds a key of the queue whose
/// prefix (`<namespace>:{<queue>}:`) it is given, and fails on a kind it does not know.
pub fn lua_prelude(wanted: impl Fn(&str) -> bool) -> String {
    let mut table = String::from("local QUEUE_KEYS = {");
    for kind in ALL
        .iter()
        .filter(|k| k.scope == Scope::Queue && wanted(k.name))
    {
        let _ = write!(table, " {} = '{}',", kind.name, kind.suffix);
    }
    table.push_str(" }\n");
    table.push_str(
        "local function qkey(prefix, kind, name)\n\
         \x20 local suffix = QUEUE_KEYS[kind]\n\
         \x20 if not suffix then error('unknown key kind ' .. tostring(kind)) end\n\
         \x20 return prefix .. suffix .. (name or '')\n\
         end\n",
    );
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_unique_in_their_scope_and_the_lua_table_holds_every_queue_kind() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert!(a.name != b.name, "two kinds named {}", a.name);
            }
        }
        let lua = lua_prelude(|_| true);
        for kind in ALL.iter().filter(|k| k.scope == Scope::Queue) {
            assert!(lua.contains(&format!(" {} = '{}',", kind.name, kind.suffix)));
        }
        assert!(lua.contains("local function qkey(prefix, kind, name)"));
    }
}
