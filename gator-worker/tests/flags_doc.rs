//! The book's reference table of the worker's flags (`docs/operate/worker-flags.md`) and the
//! command line agree (issue 36): every flag `gator-worker --help` shows is in the table, with
//! its environment variable and default, every flag the table names exists, every subcommand's
//! own flags are listed under it, and every `GATOR_*` variable the crates read is on the page.
//! Read from clap's own description of the command, which is what `--help` prints.

use clap::{Arg, Command, CommandFactory};
use gator_worker::config::Cli;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits in the workspace")
        .to_path_buf()
}

/// The reference page.
fn page() -> String {
    std::fs::read_to_string(root().join("docs/operate/worker-flags.md")).expect("the flags page")
}

/// The cells of every table row under `heading` (up to the next `## `), header rows excluded.
fn rows(page: &str, heading: &str) -> Vec<Vec<String>> {
    let section = page
        .split_once(heading)
        .unwrap_or_else(|| panic!("the flags page has no {heading:?}"))
        .1;
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .skip(1)
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

/// The `code` spans of a cell.
fn spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// What the page says of a flag: its environment variable and default, `–` for none.
type Said = (String, String);

/// What `--help` says of `arg`, in the page's words.
fn said(arg: &Arg) -> Said {
    let env = arg
        .get_env()
        .map_or("–".to_owned(), |e| format!("`{}`", e.to_string_lossy()));
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    let default = if defaults.is_empty() {
        "–".to_owned()
    } else {
        format!("`{}`", defaults.join(","))
    };
    (env, default)
}

/// The long flags of `command` itself (not those it inherits as global), with what they say.
fn own_flags(command: &Command, globals: bool) -> BTreeMap<String, Said> {
    command
        .get_arguments()
        .filter(|a| globals || !a.is_global_set())
        .filter_map(|a| a.get_long().map(|long| (format!("--{long}"), said(a))))
        .collect()
}

/// Whether a documented flag or command exists only with a feature this build lacks: the
/// outbox's (`postgres`). Without it, `--outbox` is still read, hidden, to be refused.
fn not_built(name: &str) -> bool {
    cfg!(not(feature = "postgres"))
        && (name.starts_with("--outbox") || name.starts_with("gator-worker outbox"))
}

/// The keys of `these` that `those` lacks.
fn absent<'a, V, W>(
    these: &'a BTreeMap<String, V>,
    those: &BTreeMap<String, W>,
) -> Vec<&'a String> {
    these.keys().filter(|k| !those.contains_key(*k)).collect()
}

#[test]
fn every_flag_of_the_worker_is_in_the_table_with_its_variable_and_default() {
    let command = Cli::command();
    let mut shown = own_flags(&command, true);
    let none = ("–".to_owned(), "–".to_owned());
    shown.insert("--help".to_owned(), none.clone());
    shown.insert("--version".to_owned(), none);
    let mut documented = BTreeMap::new();
    for row in rows(&page(), "## Running the worker") {
        let flag = spans(&row[0]).into_iter().find(|s| s.starts_with("--"));
        let flag = flag.unwrap_or_else(|| panic!("a row without a --flag: {row:?}"));
        documented.insert(flag, (row[1].clone(), row[2].clone()));
    }
    documented.retain(|flag, _| !not_built(flag));
    shown.retain(|flag, _| !not_built(flag));
    let missing = absent(&shown, &documented);
    let gone = absent(&documented, &shown);
    assert!(
        missing.is_empty(),
        "flags --help shows that the table lacks: {missing:?}"
    );
    assert!(
        gone.is_empty(),
        "flags the table names that --help lacks: {gone:?}"
    );
    for (flag, says) in &shown {
        assert_eq!(
            &documented[flag], says,
            "{flag}: the table's (environment, default) differ from --help's"
        );
    }
}

/// Every subcommand under `command`, by its path from the binary, with its own flags.
fn subcommands(command: &Command, path: &str, into: &mut BTreeMap<String, (bool, Vec<String>)>) {
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        let here = format!("{path} {}", sub.get_name());
        let flags: Vec<String> = own_flags(sub, false).into_keys().collect();
        let leaf = sub.get_subcommands().next().is_none();
        into.insert(here.clone(), (leaf, flags));
        subcommands(sub, &here, into);
    }
}

#[test]
fn every_subcommand_is_in_the_table_with_its_own_flags() {
    let mut commands = BTreeMap::new();
    subcommands(&Cli::command(), "gator-worker", &mut commands);
    assert!(
        commands.len() > 20,
        "only {} subcommands found",
        commands.len()
    );
    let mut documented = BTreeMap::new();
    for row in rows(&page(), "## The subcommands") {
        let path = spans(&row[0])
            .pop()
            .unwrap_or_else(|| panic!("a row without a command: {row:?}"));
        let mut flags = spans(&row[1]);
        flags.sort();
        documented.insert(path, flags);
    }
    documented.retain(|path, _| !not_built(path));
    for (path, (leaf, flags)) in &commands {
        let mut flags = flags.clone();
        flags.sort();
        match documented.get(path) {
            Some(listed) => assert_eq!(
                listed, &flags,
                "{path}: the table's flags differ from --help's"
            ),
            None => assert!(
                !leaf && flags.is_empty(),
                "{path} (flags {flags:?}) is not in the table"
            ),
        }
    }
    let gone = absent(&documented, &commands);
    assert!(
        gone.is_empty(),
        "commands the table names that do not exist: {gone:?}"
    );
}

/// Every `"GATOR_…"` string literal in the Rust files under `folder`.
fn variables(folder: &Path, into: &mut Vec<String>) {
    for entry in std::fs::read_dir(folder).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            variables(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            for (at, _) in text.match_indices("\"GATOR_") {
                let name: String = text[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                into.push(name);
            }
        }
    }
}

#[test]
fn every_variable_the_crates_read_is_on_the_page() {
    let mut found = Vec::new();
    for crate_dir in ["gator-core/src", "gator-worker/src", "gator/src"] {
        variables(&root().join(crate_dir), &mut found);
    }
    assert!(found.len() > 10, "only {found:?} found");
    let page = page();
    let missing: Vec<&String> = found
        .iter()
        .filter(|v| !page.contains(&format!("`{v}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "variables read but not on the flags page: {missing:?}"
    );
}
