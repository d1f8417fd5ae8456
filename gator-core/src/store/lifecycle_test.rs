//! The lifecycle table ([`crate::wire::lifecycle::TRANSITIONS`]) against the code: every status
//! record a script or the store writes is a transition the table lists, every row is written
//! by what it names, and `docs/wire-format.md` shows the table as it is.

use crate::wire::lifecycle::{State, TRANSITIONS, markdown};
use std::collections::BTreeSet;
use std::path::Path;

/// The states each Lua script writes into status records: the literal word of each
/// `set_status`/`set_statuses` call and each `SET` of a `:job:` key, or, where the word is not
/// a literal, the states its `-- Records` header line lists.
fn written_by_scripts() -> BTreeSet<(String, State)> {
    let lua = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/lua");
    let mut written = BTreeSet::new();
    for entry in std::fs::read_dir(lua).expect("the lua folder") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        if name == "prelude.lua" {
            continue; // where `set_status` is defined: its callers say what they record
        }
        let text = std::fs::read_to_string(&path).expect("a script");
        let declared: Vec<State> = text
            .lines()
            .find_map(|l| l.strip_prefix("-- Records"))
            .map(|list| {
                list.split(',')
                    .filter_map(|w| State::parse(w.trim()))
                    .collect()
            })
            .unwrap_or_default();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("--")) {
            for state in states_written(line, &text, &declared, &name) {
                written.insert((name.clone(), state));
            }
        }
    }
    written
}

/// The states `line` writes into a status record.
fn states_written(line: &str, script: &str, declared: &[State], name: &str) -> Vec<State> {
    let call = ["set_status(", "set_statuses("]
        .iter()
        .find_map(|f| line.split_once(f).map(|(_, args)| args));
    let value = match call {
        // The third argument: the record's value.
        Some(args) if !line.contains("local function") => args.splitn(3, ',').nth(2),
        _ => status_key_set(line, script),
    };
    let Some(value) = value.map(str::trim) else {
        return Vec::new();
    };
    match value.strip_prefix('\'') {
        Some(rest) => {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase())
                .collect();
            vec![State::parse(&word).unwrap_or_else(|| panic!("{name} writes {word:?}"))]
        }
        None => {
            assert!(
                !declared.is_empty(),
                "{name} writes a status that is not a literal ({line:?}): list the states it \
                 records in a `-- Records` header line"
            );
            declared.to_vec()
        }
    }
}

/// The value of `redis.call('SET', KEYS[n], ...)` when `KEYS[n]` is a status record.
fn status_key_set<'a>(line: &'a str, script: &str) -> Option<&'a str> {
    let rest = line.split_once("redis.call('SET', KEYS[")?.1;
    let (n, value) = rest.split_once("],")?;
    let header = format!("-- KEYS[{n}]");
    let is_status = script
        .lines()
        .any(|l| l.starts_with(&header) && l.contains(":job:"));
    is_status.then_some(value)
}

#[test]
fn every_status_a_script_writes_is_a_listed_transition_and_every_row_is_written() {
    let written = written_by_scripts();
    assert!(written.len() > 15, "too few writes found: {written:?}");
    for (script, state) in &written {
        assert!(
            TRANSITIONS.iter().any(|t| t.by == script && t.to == *state),
            "{script} records `{state}`, a transition the lifecycle table does not list"
        );
    }
    for row in TRANSITIONS.iter().filter(|t| t.by.ends_with(".lua")) {
        assert!(
            written.contains(&(row.by.to_owned(), row.to)),
            "the table says {} records `{}`, but it does not",
            row.by,
            row.to
        );
    }
}

#[test]
fn the_store_writes_what_its_rows_say() {
    let store = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let read = |file: &str| std::fs::read_to_string(store.join(file)).expect("a store file");
    for row in TRANSITIONS.iter().filter(|t| t.by.starts_with("store::")) {
        let (file, needle) = match row.by {
            "store::queue::enqueue" => ("queue.rs", ".arg(\"queued\")"),
            "store::status::mark_running" => ("status/mod.rs", "running_record(since_ms"),
            "store::ack::ack_and_take" => ("ack.rs", ".arg(ack.record)"),
            other => panic!("no check for {other}: add one"),
        };
        assert!(
            read(file).contains(needle),
            "{} no longer writes {}",
            row.by,
            row.to
        );
    }
}

#[test]
fn the_wire_format_doc_shows_the_table_as_it_is() {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/wire-format.md");
    let doc = std::fs::read_to_string(doc).expect("docs/wire-format.md");
    let table = markdown();
    assert!(
        doc.contains(&table),
        "docs/wire-format.md must show the lifecycle table as it is:\n{table}"
    );
}
