//! Keeps `docs/wire-format.md` honest: every key kind and every Lua script is named there.

use super::keys::Keys;
use super::keys::kinds::{self, Scope};
use super::scripts;

const DOC: &str = include_str!("../../../docs/wire-format.md");

#[test]
fn every_key_kind_is_documented_in_the_wire_format() {
    // From the one definition of the kinds: a new kind fails here until the doc names it.
    for kind in kinds::ALL {
        let shown = match kind.scope {
            Scope::Global => format!("`gator:{}", kind.suffix),
            Scope::Queue => format!("`gator:{{<queue>}}:{}", kind.suffix),
            Scope::Replies => format!("`gator:{{replies}}:{}", kind.suffix),
            Scope::Limiter => format!("`gator:limiter:{{<name>}}:{}", kind.suffix),
            Scope::Catalogue => format!("`gator:{{catalogue}}:{}", kind.suffix),
        };
        // A kind that takes a name is followed by its placeholder; any other ends the key.
        let shown = if kind.is_named() {
            shown
        } else {
            format!("{shown}`")
        };
        assert!(
            DOC.contains(&shown),
            "docs/wire-format.md does not name the {} key {shown}…",
            kind.name
        );
    }
    // The one global key the table does not hold: it is built from the namespace alone.
    let k = Keys::default();
    assert_eq!(k.queues(), "gator:queues");
}

#[test]
fn scripts_build_keys_with_qkey_and_known_kinds_only() {
    let libs = [
        ("prelude.lua", include_str!("lua/prelude.lua")),
        ("flow_lib.lua", include_str!("lua/flow_lib.lua")),
        ("wf_lib.lua", include_str!("lua/wf_lib.lua")),
        ("unique_lib.lua", include_str!("lua/unique_lib.lua")),
    ];
    let queue_kinds: Vec<&kinds::Kind> = kinds::ALL
        .iter()
        .filter(|k| k.scope == Scope::Queue)
        .collect();
    for (name, source) in scripts::ALL.iter().chain(libs.iter()) {
        for line in source.lines().filter(|l| !l.trim_start().starts_with("--")) {
            for (_, rest) in line.match_indices("qkey(").map(|(i, _)| line.split_at(i)) {
                let Some(kind) = rest.split('\'').nth(1) else {
                    continue;
                };
                assert!(
                    queue_kinds.iter().any(|k| k.name == kind),
                    "{name} asks qkey for an unknown kind {kind:?}: {line}"
                );
            }
            // A key is never spelled by hand: `<prefix> .. 'held:'` and the like.
            for kind in &queue_kinds {
                let spelled = format!(".. '{}'", kind.suffix);
                assert!(
                    !line.contains(&spelled),
                    "{name} spells the {} key by hand ({line}): use qkey(prefix, '{}', ...)",
                    kind.name,
                    kind.name
                );
            }
        }
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
