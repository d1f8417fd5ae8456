//! Every ```rust block of the README is compiled by some test (issue 32). Each `readme_*.rs`
//! test names the blocks it compiles by calling `readme_check::assert_shows("heading", nth, ..)`
//! with literal arguments; this test reads those calls from every `readme_*.rs` file in this
//! folder and fails on a README block that no file claims, on a claim that names no block, and
//! on a block claimed twice. So a block added to the README without a test fails here.

#[path = "readme/check.rs"]
mod readme_check;

use std::collections::BTreeMap;
use std::path::Path;

/// The call each test makes for each block it compiles.
const CLAIM: &str = "assert_shows(";

/// The (heading, nth) of every `assert_shows("heading", nth, ..)` call in `source`; panics on
/// a call whose first two arguments are not literals, which this test could not read.
fn claims(file: &str, source: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (at, _) in source.match_indices(CLAIM) {
        let rest = source[at + CLAIM.len()..].trim_start();
        let parsed = rest.strip_prefix('"').and_then(|rest| {
            let (heading, rest) = rest.split_once('"')?;
            let rest = rest.trim_start().strip_prefix(',')?.trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            Some((heading.to_owned(), digits.parse().ok()?))
        });
        match parsed {
            Some(claim) => found.push(claim),
            None => panic!("{file}: an `{CLAIM}` call without a literal heading and nth"),
        }
    }
    found
}

/// Every claim of every `readme_*.rs` file here, with the files that make it.
fn all_claims() -> BTreeMap<(String, usize), Vec<String>> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut all: BTreeMap<(String, usize), Vec<String>> = BTreeMap::new();
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

#[test]
fn every_rust_block_of_the_readme_is_compiled_by_a_test() {
    let blocks = readme_check::rust_blocks(readme_check::README);
    // A second count, by fence lines alone, so that a parser that skips a block cannot hide it.
    let fences = readme_check::README
        .lines()
        .filter(|l| l.trim_start().starts_with("```rust"))
        .count();
    assert_eq!(
        blocks.len(),
        fences,
        "the README's ```rust blocks were not all found"
    );
    let claimed = all_claims();
    let uncovered: Vec<String> = blocks
        .iter()
        .filter(|b| !claimed.contains_key(&(b.heading.clone(), b.nth)))
        .map(|b| {
            format!(
                "{} #{}: {}",
                b.heading,
                b.nth,
                b.lines.first().map_or("", |l| l)
            )
        })
        .collect();
    assert!(
        uncovered.is_empty(),
        "README blocks no readme_*.rs test compiles: {uncovered:#?}"
    );
    for ((heading, nth), files) in &claimed {
        let exists = blocks
            .iter()
            .any(|b| b.heading == *heading && b.nth == *nth);
        assert!(
            exists,
            "{files:?} claim block #{nth} under {heading:?}, which the README lacks"
        );
        assert!(
            files.len() == 1,
            "block #{nth} under {heading:?} is claimed by {files:?}"
        );
    }
}

#[test]
fn claims_are_read_whatever_the_layout() {
    let source = "x.assert_shows(\n    \"### Chains\",\n    2,\n    here,\n);";
    assert_eq!(claims("a.rs", source), vec![("### Chains".to_owned(), 2)]);
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
