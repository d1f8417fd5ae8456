//! Every ```rust block of the README and the book (`docs/`) is compiled by some test (issues 32
//! and 36). Each `readme_*.rs` test names the blocks it compiles by calling
//! `readme_check::assert_shows("page", "heading", nth, ..)` with literal arguments; this test
//! reads those calls from every `readme_*.rs` file in this folder and fails on a block that no
//! file claims, on a claim that names no block, and on a block claimed twice. So a block added
//! to a page without a test fails here.

#[path = "readme/check.rs"]
mod readme_check;

use std::collections::BTreeMap;
use std::path::Path;

/// The call each test makes for each block it compiles.
const CLAIM: &str = "assert_shows(";

/// A block's name: its page, its heading line, its ordinal under that heading.
type Name = (String, String, usize);

/// One literal string argument at the start of `rest`, and what follows its comma.
fn literal(rest: &str) -> Option<(String, &str)> {
    let rest = rest.trim_start().strip_prefix('"')?;
    let (text, rest) = rest.split_once('"')?;
    Some((text.to_owned(), rest.trim_start().strip_prefix(',')?))
}

/// The (page, heading, nth) of every `assert_shows("page", "heading", nth, ..)` call in
/// `source`; panics on a call whose first three arguments are not literals, which this test
/// could not read.
fn claims(file: &str, source: &str) -> Vec<Name> {
    let mut found = Vec::new();
    for (at, _) in source.match_indices(CLAIM) {
        let parsed = literal(&source[at + CLAIM.len()..]).and_then(|(page, rest)| {
            let (heading, rest) = literal(rest)?;
            let digits: String = rest
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            Some((page, heading, digits.parse().ok()?))
        });
        match parsed {
            Some(claim) => found.push(claim),
            None => panic!("{file}: an `{CLAIM}` call without a literal page, heading and nth"),
        }
    }
    found
}

/// Every claim of every `readme_*.rs` file here, with the files that make it.
fn all_claims() -> BTreeMap<Name, Vec<String>> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut all: BTreeMap<Name, Vec<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&folder).expect("the tests folder") {
        let path = entry.expect("a directory entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if !(name.starts_with("readme_") && name.ends_with(".rs")) || name == "readme_coverage.rs" {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a readme test's source");
        for claim in claims(&name, &source) {
            all.entry(claim).or_default().push(name.clone());
        }
    }
    all
}

/// Every ```rust block of every page, by name, with its first line.
fn all_blocks() -> BTreeMap<Name, String> {
    let mut all = BTreeMap::new();
    for page in readme_check::pages() {
        let text = readme_check::read(&page);
        let blocks = readme_check::rust_blocks(&text);
        // A second count, by fence lines alone, so that a parser that skips a block cannot hide it.
        let fences = text
            .lines()
            .filter(|l| l.trim_start().starts_with("```rust"))
            .count();
        assert_eq!(
            blocks.len(),
            fences,
            "{page}'s ```rust blocks were not all found"
        );
        for b in blocks {
            let first = b.lines.first().cloned().unwrap_or_default();
            all.insert((page.clone(), b.heading, b.nth), first);
        }
    }
    all
}

#[test]
fn every_rust_block_of_the_readme_and_the_book_is_compiled_by_a_test() {
    let blocks = all_blocks();
    assert!(
        blocks
            .keys()
            .any(|(page, ..)| page.starts_with("docs/guide/")),
        "no ```rust block found in the book's guide: were the pages read?"
    );
    let claimed = all_claims();
    let uncovered: Vec<String> = blocks
        .iter()
        .filter(|(name, _)| !claimed.contains_key(*name))
        .map(|((page, heading, nth), first)| format!("{page} {heading} #{nth}: {first}"))
        .collect();
    assert!(
        uncovered.is_empty(),
        "blocks no readme_*.rs test compiles: {uncovered:#?}"
    );
    for ((page, heading, nth), files) in &claimed {
        let name = (page.clone(), heading.clone(), *nth);
        assert!(
            blocks.contains_key(&name),
            "{files:?} claim block #{nth} under {heading:?} of {page}, which it lacks"
        );
        assert!(
            files.len() == 1,
            "block #{nth} under {heading:?} of {page} is claimed by {files:?}"
        );
    }
}

#[test]
fn claims_are_read_whatever_the_layout() {
    let source = "x.assert_shows(\n    \"docs/a.md\",\n    \"### Chains\",\n    2,\n    here,\n);";
    let expected = ("docs/a.md".to_owned(), "### Chains".to_owned(), 2);
    assert_eq!(claims("a.rs", source), vec![expected]);
}

#[test]
fn headings_inside_fences_are_not_headings() {
    let markdown = "## A\n```sh\n# not a heading\n```\n```rust\nlet a = 1;\n```\n## B\n```rust,ignore\nb\n```\n```rust\nc\n```\n";
    let blocks = readme_check::rust_blocks(markdown);
    let names: Vec<(&str, usize)> = blocks.iter().map(|b| (b.heading.as_str(), b.nth)).collect();
    assert_eq!(names, [("## A", 1), ("## B", 1), ("## B", 2)]);
    assert_eq!(blocks[0].lines, ["let a = 1;"]);
}

#[test]
fn a_fence_in_a_list_item_is_a_block() {
    let markdown = "## A\n- an item:\n  ```rust\n  let x = 2;\n  ```\n";
    let blocks = readme_check::rust_blocks(markdown);
    assert_eq!(blocks.len(), 1);
    assert_eq!(readme_check::squeeze(&blocks[0].lines[0]), "let x = 2;");
}
