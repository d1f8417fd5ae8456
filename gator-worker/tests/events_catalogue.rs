//! The catalogue of tracing events in `src/lib.rs` lists every `info!`, `warn!` and `error!`
//! that the worker and the core crate emit, at its level, and nothing that is gone: operators
//! write alerts against these messages.
//!
//! The code is read as text: each macro call's message is its last string literal at the top
//! level of the call. A catalogue entry is a backtick-quoted message in a table row; one ending
//! in `…` matches any message that starts with the text before it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const LEVELS: &[&str] = &["info", "warn", "error"];

/// An event: its level and its message.
type Event = (String, String);

fn sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["gator-worker/src", "gator-core/src"] {
        collect(&root.join(dir), &mut files);
    }
    files
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source dir") {
        let path = entry.expect("a dir entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Every `level!(...)` call in `text`, with the message of each.
fn events_in(text: &str) -> Vec<Event> {
    let bytes = text.as_bytes();
    let mut events = Vec::new();
    for level in LEVELS {
        let needle = format!("{level}!(");
        let mut from = 0;
        while let Some(at) = text[from..].find(&needle) {
            let start = from + at;
            from = start + needle.len();
            // `debug_info!(` or `my_warn!(` are not tracing's macros.
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            if let Some(message) = last_top_level_literal(&text[from..]) {
                events.push(((*level).to_owned(), message));
            }
        }
    }
    events
}

/// The last string literal directly inside the call whose arguments start `rest`.
fn last_top_level_literal(rest: &str) -> Option<String> {
    let chars: Vec<char> = rest.chars().collect();
    let (mut depth, mut i, mut last) = (1usize, 0usize, None);
    while depth > 0 && i < chars.len() {
        match chars[i] {
            '"' => {
                let mut literal = String::new();
                i += 1;
                while chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    literal.push(chars[i]);
                    i += 1;
                }
                if depth == 1 {
                    last = Some(literal);
                }
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    last
}

/// The catalogue: `(level, message)` from each table row of the crate docs.
fn catalogue() -> Vec<Event> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("src/lib.rs");
    let mut entries = Vec::new();
    for line in lib.lines().filter_map(|l| l.strip_prefix("//! | ")) {
        let mut columns = line.split(" | ");
        let (Some(level), Some(messages)) = (columns.next(), columns.next()) else {
            continue;
        };
        if !LEVELS.contains(&level) {
            continue; // the header and separator rows
        }
        for (i, quoted) in messages.split('`').enumerate() {
            if i % 2 == 1 {
                entries.push((level.to_owned(), quoted.to_owned()));
            }
        }
    }
    entries
}

fn matches(entry: &str, message: &str) -> bool {
    match entry.strip_suffix('…') {
        Some(prefix) => message.starts_with(prefix),
        None => entry == message,
    }
}

#[test]
fn the_catalogue_lists_every_event_and_only_events_that_exist() {
    let mut events = BTreeSet::new();
    for file in sources() {
        let text = std::fs::read_to_string(&file).expect("a source file");
        events.extend(events_in(&text));
    }
    let catalogue = catalogue();
    assert!(
        events.len() > 30 && catalogue.len() > 30,
        "the scan found too little: {} events, {} entries",
        events.len(),
        catalogue.len()
    );
    let missing: Vec<_> = events
        .iter()
        .filter(|(level, message)| {
            !catalogue
                .iter()
                .any(|(l, entry)| l == level && matches(entry, message))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "events the catalogue in gator-worker/src/lib.rs does not list (at their level): {missing:#?}"
    );
    let stale: Vec<_> = catalogue
        .iter()
        .filter(|(level, entry)| {
            !events
                .iter()
                .any(|(l, message)| l == level && matches(entry, message))
        })
        .collect();
    assert!(
        stale.is_empty(),
        "catalogue entries no code emits (at that level): {stale:#?}"
    );
}

#[test]
fn the_scanner_finds_the_message_after_the_fields() {
    let text =
        r#"warn!(queue = %q, error = %format!("{e}"), "could not \"fetch\""); my_info!("no");"#;
    assert_eq!(
        events_in(text),
        [("warn".to_owned(), "could not \"fetch\"".to_owned())]
    );
}
