//! Only what a script uses of the Lua libraries it is built from (the key kinds' `qkey`,
//! `lua/prelude.lua`, and the flow, workflow and unique libraries at their markers). Redis runs
//! a script's whole text at every call: each `local function` of a library is a closure made
//! (and collected) per call, and the kinds' table is 44 strings put in a new table. On Redis
//! 7.0 (`redis-benchmark -c 1 … EVALSHA`, one run): an empty script cost 2.2 µs a call, with
//! the kinds' table 5.3, with the prelude as well 7.4; `fetch.lua` pays that on every fetch of
//! a queue that the worker's last success did not draw.
//!
//! A library is a list of top-level definitions, `local function <name>(` or `local <name> =`
//! at the start of a line, each running to the next one; the lines before the first are its
//! header (comments) and always kept. A definition is kept if the script's own text names it,
//! or a kept definition does (names are Lua identifiers outside `--` comments; a name in a
//! string counts too, which only keeps more). Order is kept, so each local is defined before
//! the code after it, as in the whole library.

use std::collections::BTreeSet;

/// A top-level definition of a library: its name, and its text up to the next one.
struct Item<'a> {
    name: Option<&'a str>,
    text: &'a str,
}

/// The name a top-level line defines, if it starts a definition.
pub(super) fn defines(line: &str) -> Option<&str> {
    let rest = line
        .strip_prefix("local function ")
        .or_else(|| line.strip_prefix("local "))?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `lib` cut into its header (name `None`) and its definitions, in order.
fn items(lib: &str) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let (mut start, mut name) = (0, None);
    let mut at = 0;
    for line in lib.split_inclusive('\n') {
        if let Some(defined) = defines(line) {
            if at > start {
                items.push(Item {
                    name,
                    text: &lib[start..at],
                });
            }
            (start, name) = (at, Some(defined));
        }
        at += line.len();
    }
    if at > start {
        items.push(Item {
            name,
            text: &lib[start..at],
        });
    }
    items
}

/// The identifiers of `text` outside `--` comments.
pub(super) fn names(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|line| line.split_once("--").map_or(line, |(code, _)| code))
        .flat_map(|code| code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|word| word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

/// Each of `libs` cut down to what `body` uses, directly or through what is kept.
pub(super) fn shake(libs: &[&str], body: &str) -> Vec<String> {
    let cut: Vec<Vec<Item<'_>>> = libs.iter().map(|lib| items(lib)).collect();
    let mut wanted: BTreeSet<&str> = names(body).collect();
    loop {
        let before = wanted.len();
        for item in cut.iter().flatten() {
            if item.name.is_some_and(|name| wanted.contains(name)) {
                wanted.extend(names(item.text));
            }
        }
        if wanted.len() == before {
            break;
        }
    }
    cut.iter()
        .map(|items| {
            items
                .iter()
                .filter(|item| item.name.is_none_or(|name| wanted.contains(name)))
                .map(|item| item.text)
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIB: &str = "-- lib.lua: helpers\n\
        local LIMIT = 3\n\
        local function a(x)\n  return b(x) + LIMIT\nend\n\
        -- b's comment names c(), which it does not call\n\
        local function b(x)\n  return x\nend\n\
        local function c()\n  return 'c'\nend\n";

    #[test]
    fn a_definition_is_kept_when_the_body_or_a_kept_one_names_it() {
        let kept = shake(&[LIB], "return a(1)\n");
        assert_eq!(
            kept[0],
            "-- lib.lua: helpers\nlocal LIMIT = 3\nlocal function a(x)\n  return b(x) + LIMIT\n\
             end\n-- b's comment names c(), which it does not call\nlocal function b(x)\n  \
             return x\nend\n"
        );
        assert_eq!(
            shake(&[LIB], "return c()\n")[0],
            "-- lib.lua: helpers\nlocal function c()\n  return 'c'\nend\n"
        );
    }

    #[test]
    fn a_name_used_only_in_a_comment_keeps_nothing() {
        assert_eq!(
            shake(&[LIB], "-- a(1)\nreturn 1\n")[0],
            "-- lib.lua: helpers\n"
        );
    }

    #[test]
    fn a_later_library_keeps_what_it_uses_of_an_earlier_one() {
        let later = "local function d()\n  return c()\nend\n";
        let kept = shake(&[LIB, later], "return d()\n");
        assert!(kept[0].contains("local function c()") && !kept[0].contains("function a"));
        assert_eq!(kept[1], later);
    }
}
