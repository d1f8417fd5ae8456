//! The ```rust blocks of the README and the book (`docs/`), found by their page and the heading
//! above them, and the check that a test file compiles every line one shows. Shared by every
//! `readme_*.rs` test through `#[path = "readme/check.rs"] mod readme_check;`: it lives in a
//! folder so that Cargo does not build it as a test of its own.
//!
//! A block is named by its page (`docs/guide/jobs.md`, from the workspace root), the nearest
//! heading before it (the whole line, `## Chains`) and its ordinal under that heading, from 1:
//! line numbers change with every edit above a block, a heading rarely does, and a block moved
//! to another section fails loudly instead of silently checking the wrong code.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::path::{Path, PathBuf};

/// The workspace root, where the README and `docs/` are.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace")
        .to_path_buf()
}

/// Every page whose ```rust blocks are compiled: `README.md`, `CONTRIBUTING.md` and every
/// `.md` file under `docs/`, as paths from the workspace root with `/`, sorted.
pub fn pages() -> Vec<String> {
    let mut found = vec!["README.md".to_owned(), "CONTRIBUTING.md".to_owned()];
    let mut folders = vec![root().join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("the docs folder") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let relative = path.strip_prefix(root()).expect("under the root");
                found.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

/// The text of `page` (a path from the workspace root).
pub fn read(page: &str) -> String {
    std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"))
}

/// One ```rust block of the README (```rust,ignore too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The nearest heading line above it, `#`s included.
    pub heading: String,
    /// Its place among the ```rust blocks under that heading, from 1.
    pub nth: usize,
    /// Its lines, fences excluded.
    pub lines: Vec<String>,
}

/// Every ```rust block of `markdown`, in order. Lines inside any fence (a `# comment` in a
/// shell block) are not headings.
pub fn rust_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut heading = String::from("(top)");
    let mut fence: Option<Option<Block>> = None; // inside a fence; Some(block) if it is rust
    for line in markdown.lines() {
        // A fence may be indented (in a list item); its lines are squeezed when compared.
        let trimmed = line.trim();
        match &mut fence {
            None if trimmed.starts_with("```") => {
                let rust = trimmed == "```rust" || trimmed.starts_with("```rust,");
                let nth = 1 + blocks.iter().filter(|b| b.heading == heading).count();
                let block = Block {
                    heading: heading.clone(),
                    nth,
                    lines: Vec::new(),
                };
                fence = Some(rust.then_some(block));
            }
            None if line.starts_with('#') => heading = trimmed.to_owned(),
            None => {}
            Some(open) if trimmed == "```" => {
                blocks.extend(open.take());
                fence = None;
            }
            Some(Some(block)) => block.lines.push(line.to_owned()),
            Some(None) => {}
        }
    }
    assert!(fence.is_none(), "a page ends inside a code fence");
    blocks
}

/// The `nth` ```rust block under `heading` (the whole heading line) of `page`, or a panic
/// saying which headings of that page have blocks.
pub fn block(page: &str, heading: &str, nth: usize) -> Block {
    let blocks = rust_blocks(&read(page));
    match blocks.iter().find(|b| b.heading == heading && b.nth == nth) {
        Some(found) => found.clone(),
        None => {
            let known: Vec<String> = blocks
                .iter()
                .map(|b| format!("{} #{}", b.heading, b.nth))
                .collect();
            panic!("{page} has no ```rust block #{nth} under {heading:?}; it has: {known:#?}")
        }
    }
}

/// A line with its runs of whitespace made one space and its ends trimmed: rustfmt aligns
/// trailing comments its own way, and indentation depends on the code around a block.
pub fn squeeze(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Panics unless every non-empty line of `page`'s `nth` ```rust block under `heading` is a
/// line of `source` (a test file's own text, by `include_str!`), in order, naming the first one
/// missing. A code line must match a code line: a line of the block that is not a comment
/// cannot be satisfied by a comment of the test file.
pub fn assert_shows(page: &str, heading: &str, nth: usize, source: &str) {
    let here: Vec<String> = source.lines().map(squeeze).collect();
    let shown = block(page, heading, nth);
    let mut at = 0;
    for line in shown
        .lines
        .iter()
        .map(|l| squeeze(l))
        .filter(|l| !l.is_empty())
    {
        let comment = line.starts_with("//");
        let found = here[at..]
            .iter()
            .position(|l| *l == line && (comment || !l.starts_with("//")));
        match found {
            Some(offset) => at += offset + 1,
            None => panic!(
                "{page}'s block #{nth} under {heading:?} shows a line this file does not \
                 compile (or not in this order): {line:?}"
            ),
        }
    }
}
