//! One `redis::Script` per file in `lua/`. redis-rs sends EVALSHA and loads the script after a
//! NOSCRIPT reply (a restarted server, another cluster node), so no SHA cache is kept here.

use redis::Script;
use std::sync::LazyLock;

/// What every script starts with: `lua/prelude.lua`'s helpers (`now_ms`, `wrong_type`).
const PRELUDE: &str = include_str!("lua/prelude.lua");

/// `lua/flow_lib.lua`, the flow-control library (parking, units, rates), inserted where a
/// script says `-- @flow_lib`: only the scripts that may put a job on a queue or settle one
/// pay for defining it, and a script can run its plain path before it.
const FLOW_LIB: &str = include_str!("lua/flow_lib.lua");

/// The marker line a script puts where it needs the flow library.
const FLOW_LIB_MARKER: &str = "-- @flow_lib\n";

/// `lua/wf_lib.lua`, the workflow library (release, count, cancel), inserted where a script
/// says `-- @wf_lib`.
const WF_LIB: &str = include_str!("lua/wf_lib.lua");

/// The marker line a script puts where it needs the workflow library.
const WF_LIB_MARKER: &str = "-- @wf_lib\n";

/// `lua/unique_lib.lua`, the unique jobs' locks (take, name, release), inserted where a
/// script says `-- @unique_lib`.
const UNIQUE_LIB: &str = include_str!("lua/unique_lib.lua");

/// The marker line a script puts where it needs the unique library.
const UNIQUE_LIB_MARKER: &str = "-- @unique_lib\n";

/// `lua/later_lib.lua`, the minutes' lists of jobs scheduled beyond the horizon
/// ([`super::later`]), inserted where a script says `-- @later_lib`.
const LATER_LIB: &str = include_str!("lua/later_lib.lua");

/// The marker line a script puts where it needs the later library.
const LATER_LIB_MARKER: &str = "-- @later_lib\n";

/// `source` with the key kinds' table and `qkey` ([`super::keys::kinds::lua_prelude`]) and the
/// prelude inserted after its first line, the `#!lua` line that must stay first, and the flow,
/// workflow or unique library at its marker: of each, only what the script uses
/// ([`super::shake`]), and of the kinds' table only the kinds its text names.
fn with_prelude(source: &str) -> Script {
    Script::new(&composed(source))
}

/// The text [`with_prelude`] loads.
fn composed(source: &str) -> String {
    let (shebang, body) = source.split_once('\n').unwrap_or((source, ""));
    let markers = [
        (FLOW_LIB_MARKER, FLOW_LIB),
        (WF_LIB_MARKER, WF_LIB),
        (UNIQUE_LIB_MARKER, UNIQUE_LIB),
        (LATER_LIB_MARKER, LATER_LIB),
    ];
    let used: Vec<_> = markers.iter().filter(|(m, _)| body.contains(m)).collect();
    let qkey = super::keys::kinds::lua_prelude(|_| false);
    let mut libs = vec![qkey.as_str(), PRELUDE];
    libs.extend(used.iter().map(|(_, lib)| *lib));
    let kept = super::shake::shake(&libs, body);
    let mut body = body.to_owned();
    for ((marker, _), lib) in used.iter().zip(&kept[2..]) {
        body = body.replacen(marker, lib, 1);
    }
    let text = format!("{}{body}", kept[1]);
    // `qkey` and its table, if anything kept calls it: only the kinds named in quotes.
    let kinds = if kept[0].is_empty() {
        String::new()
    } else {
        super::keys::kinds::lua_prelude(|name| text.contains(&format!("'{name}'")))
    };
    format!("{shebang}\n{kinds}{text}")
}

macro_rules! scripts {
    ($($(#[$doc:meta])* $name:ident => $file:literal;)*) => {
        $(
            $(#[$doc])*
            pub static $name: LazyLock<Script> = LazyLock::new(|| with_prelude(include_str!(concat!("lua/", $file))));
        )*
        /// Every script file with its text (without the prelude), for the wire-format doc test.
        #[cfg(test)]
        pub const ALL: &[(&str, &str)] = &[$(($file, include_str!(concat!("lua/", $file)))),*];
    };
}

scripts! {
    /// `lua/enqueue.lua`: put jobs on their queue's list, or park them if it is controlled.
    ENQUEUE => "enqueue.lua";
    /// `lua/admit.lua`: the fetch of a controlled queue (pause, priority, limits, rates).
    ADMIT => "admit.lua";
    /// `lua/flow_ack.lua`: settle the success of an admitted job and release its units.
    FLOW_ACK => "flow_ack.lua";
    /// `lua/ack_plain.lua`: a plain success, when Redis refused its `MULTI` at maxmemory.
    ACK_PLAIN => "ack_plain.lua";
    /// `lua/finished_trim.lua`: keep the records of at most a count of finished jobs.
    FINISHED_TRIM => "finished_trim.lua";
    /// `lua/delete.lua`: delete set entries for good, with their jobs' status records.
    DELETE => "delete.lua";
    /// `lua/flow_set.lua`: change a queue's flow settings.
    FLOW_SET => "flow_set.lua";
    /// `lua/limiter_take.lua`: take a start of a shared rate limiter, on its own slot.
    LIMITER_TAKE => "limiter_take.lua";
    /// `lua/schedule.lua`: enqueue a job (and a chain's waiting steps) now or later, on Redis time.
    SCHEDULE => "schedule.lua";
    /// `lua/later_find.lua`: bring a job scheduled beyond the horizon back into the set, by jid.
    LATER_FIND => "later_find.lua";
    /// `lua/later_range.lua`: read the minutes' lists a range at a time, for a search.
    LATER_RANGE => "later_range.lua";
    /// `lua/scheduled_page.lua`: a page of the scheduled set and the minutes' lists merged.
    SCHEDULED_PAGE => "scheduled_page.lua";
    /// `lua/promote_due.lua`: move due jobs from the scheduled and retry sets to the queue.
    PROMOTE_DUE => "promote_due.lua";
    /// `lua/lease.lua`: take or renew a process's lease on a queue.
    LEASE => "lease.lua";
    /// `lua/progress.lua`: record a running job's progress, on Redis time.
    PROGRESS => "progress.lua";
    /// `lua/position.lua`: where a job stands in its queue's list, in O(log n) probes.
    POSITION => "position.lua";
    /// `lua/fetch.lua`: move a batch of jobs from a queue into a process's in-flight list.
    FETCH => "fetch.lua";
    /// `lua/fetch_except.lua`: `fetch.lua`, passing over the jobs of names other workers run.
    FETCH_EXCEPT => "fetch_except.lua";
    /// `lua/ack.lua`: settle a chain step's success and record its next step's hand-off.
    ACK => "ack.lua";
    /// `lua/chain_take.lua`: take a chain's next step off its list, into the hand-off hash.
    CHAIN_TAKE => "chain_take.lua";
    /// `lua/chain_push.lua`: push a handed-off step to its queue, once.
    CHAIN_PUSH => "chain_push.lua";
    /// `lua/relay_push.lua`: push jobs an outbox relay took from PostgreSQL, each once.
    RELAY_PUSH => "relay_push.lua";
    /// `lua/wf_create.lua`: store a new workflow whole, its first steps ready to push.
    WF_CREATE => "wf_create.lua";
    /// `lua/wf_report.lua`: record that a workflow step ended, once, and release its children.
    WF_REPORT => "wf_report.lua";
    /// `lua/wf_pushed.lua`: forget a released workflow step once it is on its queue.
    WF_PUSHED => "wf_pushed.lua";
    /// `lua/wf_add.lua`: add a step to a running workflow.
    WF_ADD => "wf_add.lua";
    /// `lua/wf_cancel.lua`: cancel a running workflow's steps that have not started.
    WF_CANCEL => "wf_cancel.lua";
    /// `lua/cancel.lua`: cancel a waiting job, or mark a running one for its worker to stop.
    CANCEL => "cancel.lua";
    /// `lua/cancelled.lua`: settle a job whose cancellation was asked for.
    CANCELLED => "cancelled.lua";
    /// `lua/await.lua`: settle an attempt that waits for a reply.
    AWAIT => "await.lua";
    /// `lua/reply_wait.lua`: register a wait for a reply, or match one that came first.
    REPLY_WAIT => "reply_wait.lua";
    /// `lua/reply.lua`: deliver a reply, keep it for its wait, or drop a duplicate.
    REPLY => "reply.lua";
    /// `lua/reply_expire.lua`: end the waits whose time ran out, or a cancelled one.
    REPLY_EXPIRE => "reply_expire.lua";
    /// `lua/reply_done.lua`: record a waiting job done with its reply.
    REPLY_DONE => "reply_done.lua";
    /// `lua/durable_save.lua`: save a running durable job's state into its payload in flight.
    DURABLE_SAVE => "durable_save.lua";
    /// `lua/suspend.lua`: park a durable job's run until its time (a sleep, a slice yielded).
    SUSPEND => "suspend.lua";
    /// `lua/retry.lua`: settle a failure that runs again later.
    RETRY => "retry.lua";
    /// `lua/kill.lua`: settle a job into the dead set and trim it.
    KILL => "kill.lua";
    /// `lua/recover.lua`: put the in-flight jobs of processes whose lease expired back in the queue.
    RECOVER => "recover.lua";
    /// `lua/put_back.lua`: put a process's own in-flight jobs back and give up its lease.
    PUT_BACK => "put_back.lua";
    /// `lua/release.lua`: put one stranded in-flight job back at the head of its queue.
    RELEASE => "release.lua";
    /// `lua/clear_queue.lua`: delete jobs from the head of a queue's list, with their records.
    CLEAR_QUEUE => "clear_queue.lua";
    /// `lua/locate.lua`: a job's entry in a set, from the score its status record gives.
    LOCATE => "locate.lua";
    /// `lua/move_to_queue.lua`: move one entry of a set back to its queue.
    MOVE_TO_QUEUE => "move_to_queue.lua";
    /// `lua/unique_dispatch.lua`: dispatch a unique job with its lock, or find its duplicate.
    UNIQUE_DISPATCH => "unique_dispatch.lua";
    /// `lua/unique_release.lua`: release a unique job's lock as it starts.
    UNIQUE_RELEASE => "unique_release.lua";
    /// `lua/cron_add.lua`: store a periodic entry's definition; its first tick comes after now.
    CRON_ADD => "cron_add.lua";
    /// `lua/cron_fire.lua`: enqueue a periodic entry's job for a tick, once across all workers.
    CRON_FIRE => "cron_fire.lua";
    /// `lua/cron_pause.lua`: pause or resume a periodic entry, on Redis time.
    CRON_PAUSE => "cron_pause.lua";
    /// `lua/heartbeat.lua`: register a live process and count the fleet, on Redis time.
    HEARTBEAT => "heartbeat.lua";
    /// `lua/catalogue_publish.lua`: publish a worker's jobs in the catalogue, renew its leases.
    CATALOGUE_PUBLISH => "catalogue_publish.lua";
    /// `lua/catalogue_withdraw.lua`: a stopping worker gives up its catalogue leases.
    CATALOGUE_WITHDRAW => "catalogue_withdraw.lua";
    /// `lua/catalogue_read.lua`: the catalogue's known jobs and their live runners.
    CATALOGUE_READ => "catalogue_read.lua";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The names the libraries define at their top level.
    fn defined(text: &str) -> BTreeSet<&str> {
        text.lines()
            .filter_map(super::super::shake::defines)
            .collect()
    }

    #[test]
    fn every_script_defines_each_library_name_it_uses_and_each_kind_it_builds() {
        let kinds = super::super::keys::kinds::lua_prelude(|_| true);
        for (file, source) in ALL {
            // The libraries this script is built from, whole.
            let mut whole = format!("{kinds}{PRELUDE}");
            for (marker, lib) in [
                (FLOW_LIB_MARKER, FLOW_LIB),
                (WF_LIB_MARKER, WF_LIB),
                (UNIQUE_LIB_MARKER, UNIQUE_LIB),
            ] {
                if source.contains(marker) {
                    whole.push_str(lib);
                }
            }
            let library = defined(&whole);
            let text = composed(source);
            let here = defined(&text);
            for name in super::super::shake::names(&text) {
                assert!(
                    !library.contains(name) || here.contains(name),
                    "{file} uses {name}, which its text does not define"
                );
            }
            // Every `qkey(<prefix>, '<kind>'` finds its kind in the table.
            for line in text.lines().filter(|l| !l.contains("local function qkey")) {
                for call in line.split("qkey(").skip(1) {
                    let Some((_, kind)) = call.split_once(", '") else {
                        continue;
                    };
                    let kind = kind.split('\'').next().unwrap_or_default();
                    assert!(
                        text.contains(&format!(" {kind} = '")),
                        "{file} builds a key of kind {kind}, which its table lacks"
                    );
                }
            }
        }
    }

    #[test]
    fn a_script_without_a_library_call_carries_none_of_it() {
        let text = composed(include_str!("lua/fetch.lua"));
        assert!(!text.contains("local function set_status"), "{text}");
        assert!(!text.contains(" held = '"), "{text}");
        assert!(text.contains("local function now_ms"));
    }
}
