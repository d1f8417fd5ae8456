//! Every link of the README, CONTRIBUTING.md, the CHANGELOG and the book (`docs/`) resolves
//! (issue 36): a relative link names a file or folder that exists, and a `#fragment` names a
//! heading of the page it points at, by the slug GitHub and mdBook both give a heading. Links
//! to the web are not fetched (CI may have no network); a link inside code is not a link.

#[path = "readme/check.rs"]
mod readme_check;

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// The pages whose links are checked: every page whose code is checked, and the CHANGELOG.
fn pages() -> Vec<String> {
    let mut pages = readme_check::pages();
    pages.push("CHANGELOG.md".to_owned());
    pages
}

/// `text` without its fenced code blocks and inline code spans, line by line (a removed line
/// stays, empty, so that line numbers still match the page).
fn prose(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            lines.push(String::new());
            continue;
        }
        if fenced {
            lines.push(String::new());
            continue;
        }
        // Drop `code` spans: the odd-numbered pieces between backticks.
        let kept: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, piece)| piece)
            .collect::<Vec<_>>()
            .join(" ");
        lines.push(kept);
    }
    lines
}

/// The slug of a heading's text: lower case; letters, digits, `-` and `_` kept; spaces made
/// `-`; everything else dropped (GitHub's and mdBook's rule).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Every anchor of `text`: its headings' slugs, a repeated one numbered `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#').replace('`', "").as_str());
        let mut name = base.clone();
        let mut n = 0;
        while found.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        found.insert(name);
    }
    found
}

/// The targets of the inline links (`[text](target)`, `![alt](target)`) and the reference
/// definitions (`[name]: target`) of one line of prose.
fn targets(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].split_whitespace().next().unwrap_or("");
        found.push(target.trim_matches(|c| c == '<' || c == '>').to_owned());
        rest = &after[end..];
    }
    let trimmed = line.trim_start();
    if trimmed.starts_with('[')
        && let Some((_, target)) = trimmed.split_once("]: ")
    {
        found.push(target.split_whitespace().next().unwrap_or("").to_owned());
    }
    found
}

/// `page`'s folder joined with `relative`, with `.` and `..` resolved, from the root.
fn resolve(page: &str, relative: &str) -> PathBuf {
    let mut path = PathBuf::new();
    let folder = Path::new(page).parent().unwrap_or(Path::new(""));
    for part in folder.join(relative).components() {
        match part {
            Component::ParentDir => {
                path.pop();
            }
            Component::CurDir => {}
            other => path.push(other),
        }
    }
    path
}

/// What is wrong with one link of `page`, if anything.
fn fault(page: &str, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".to_owned());
    }
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
    let path = if file.is_empty() {
        PathBuf::from(page)
    } else {
        resolve(page, file)
    };
    let full = readme_check::root().join(&path);
    if !full.exists() {
        return Some(format!("{} does not exist", path.display()));
    }
    if fragment.is_empty() || full.extension().is_none_or(|e| e != "md") {
        return None;
    }
    let text = std::fs::read_to_string(&full).expect("a page");
    (!anchors(&text).contains(fragment))
        .then(|| format!("{} has no heading #{fragment}", path.display()))
}

#[test]
fn every_link_of_the_readme_and_the_book_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = readme_check::read(&page);
        for (n, line) in prose(&text).iter().enumerate() {
            for target in targets(line) {
                checked += 1;
                if let Some(why) = fault(&page, &target) {
                    broken.push(format!("{page}:{}: ({target}): {why}", n + 1));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: were the pages read?"
    );
    assert!(broken.is_empty(), "links that do not resolve: {broken:#?}");
}

#[test]
fn slugs_follow_githubs_rule() {
    assert_eq!(
        slug("Which Redis: servers, modes and managed services"),
        "which-redis-servers-modes-and-managed-services"
    );
    assert_eq!(slug("Testing your app's jobs"), "testing-your-apps-jobs");
    assert_eq!(
        slug("`GET /api/scaling`".replace('`', "").as_str()),
        "get-apiscaling"
    );
    let repeated = anchors("# A\n## B\n```sh\n# not one\n```\n## B\n");
    assert_eq!(repeated, ["a", "b", "b-1"].map(String::from).into());
}

#[test]
fn links_in_code_are_not_links_and_fragments_are_checked() {
    let lines = prose("see [a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n[d]: w.md\n");
    let found: Vec<String> = lines.iter().flat_map(|l| targets(l)).collect();
    assert_eq!(found, ["x.md", "w.md"]);
    assert_eq!(
        resolve("docs/guide/a.md", "../operate/b.md"),
        PathBuf::from("docs/operate/b.md")
    );
    assert!(fault("README.md", "docs/guide/jobs.md#job-options").is_none());
    assert!(fault("README.md", "docs/guide/jobs.md#no-such-heading").is_some());
    assert!(fault("README.md", "docs/no-such-page.md").is_some());
    assert!(fault("README.md", "https://example.com/x").is_none());
}
