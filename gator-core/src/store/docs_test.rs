//! Keeps `docs/wire-format.md` honest: every key kind and every Lua script is named there.

use super::keys::Keys;
use super::scripts;

const DOC: &str = include_str!("../../../docs/wire-format.md");

#[test]
fn every_key_is_documented_in_the_wire_format() {
    let k = Keys::default();
    let q = "<queue>";
    for key in [
        k.queues(),
        k.processes(),
        k.process("<id>"),
        k.queue(q),
        k.inflight(q, "<process id>"),
        k.inflight_prefix(q),
        k.chain(q, "<chain id>"),
        k.outbox(q),
        k.handoff(q),
        k.handed(q, "<jid>"),
        k.leases(q),
        k.scheduled(q),
        k.retry(q),
        k.dead(q),
        k.job(q, "<jid>"),
        k.workflow(q, "<uuid>"),
        k.workflow_push(q, "<uuid>"),
        k.workflows_pushing(q),
        k.cancelling(q),
        k.reply_waits(),
        k.reply_deadlines(),
        k.reply_early("<key>"),
        k.reply_seen("<key>"),
        k.reply_outbox(),
        k.reply_stats(),
        k.flow_queues(),
        k.flow(q),
        k.held(q, "<parking key>"),
        k.critical(q),
        k.ready(q),
        k.blocked(q),
        k.timed(q),
        k.used(q),
        k.units(q, "<process id>"),
        k.seq(q),
        k.signal(q),
        k.backlog(q),
        k.tat(q, "<limiter>"),
        k.limiter_rate("<name>"),
        k.limiter_tat("<name>"),
        k.limiters(),
        k.unique(q, "<sha1 hex of key>"),
        k.cron_index(),
        k.cron_entries(q),
        k.cron_fired(q),
        k.cron_paused(q),
        k.stats(q),
        k.history_minutes(q, 20417),
        k.history_hours(q, 20417),
        k.chains_index(q),
        k.workflows_index(q),
    ] {
        assert!(
            DOC.contains(&format!("`{key}`")),
            "docs/wire-format.md does not name the key `{key}`"
        );
    }
}

#[test]
fn every_lua_script_is_documented_with_its_keys_and_args() {
    for (name, source) in scripts::ALL {
        assert!(
            DOC.contains(&format!("### {name}")),
            "docs/wire-format.md has no section for {name}"
        );
        assert!(
            source.starts_with("#!lua"),
            "{name} must start with a #!lua shebang (Redis 7 script flags)"
        );
        // Every KEYS and ARGV slot the script's header names is in its section of the doc.
        let section = DOC
            .split(&format!("### {name}"))
            .nth(1)
            .and_then(|rest| rest.split("\n### ").next())
            .unwrap_or_default();
        for line in source
            .lines()
            .filter(|l| l.starts_with("-- KEYS[") || l.starts_with("-- ARGV["))
        {
            let slot = line
                .trim_start_matches("-- ")
                .split(']')
                .next()
                .unwrap_or_default();
            assert!(
                section.contains(&format!("`{slot}]`")),
                "docs/wire-format.md's section on {name} does not describe {slot}]"
            );
        }
        // A script without arguments says `-- ARGV     none`.
        for header in ["-- KEYS[1]", "-- ARGV", "-- Returns"] {
            assert!(
                source.contains(header),
                "{name} does not document {header} in its header"
            );
        }
    }
}
