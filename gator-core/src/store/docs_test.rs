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
        k.leases(q),
        k.scheduled(q),
        k.retry(q),
        k.dead(q),
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
        // A script without arguments says `-- ARGV     none`.
        for header in ["-- KEYS[1]", "-- ARGV", "-- Returns"] {
            assert!(
                source.contains(header),
                "{name} does not document {header} in its header"
            );
        }
    }
}
