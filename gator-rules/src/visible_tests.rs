use super::*;
use crate::{flow_name, job_name};

/// The characters of Unicode class `class` (regex syntax), as regex-syntax's tables have them.
fn class(class: &str) -> Vec<(char, char)> {
    let hir = regex_syntax::Parser::new().parse(class).expect("a class");
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(set)) => {
            set.ranges().iter().map(|r| (r.start(), r.end())).collect()
        }
        other => panic!("{class} is not a class: {other:?}"),
    }
}

fn contains(ranges: &[(char, char)], c: char) -> bool {
    ranges.iter().any(|&(low, high)| (low..=high).contains(&c))
}

#[test]
fn the_default_ignorable_table_is_unicodes_property() {
    let property = class(r"\p{Default_Ignorable_Code_Point}");
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        let ours = DEFAULT_IGNORABLE
            .iter()
            .any(|&(low, high)| (low..=high).contains(&u32::from(c)));
        assert_eq!(ours, contains(&property, c), "U+{:04X}", u32::from(c));
    }
}

#[test]
fn invisible_is_control_format_separators_default_ignorable_white_space_and_the_braille_blank() {
    let classes =
        class(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{White_Space}\p{Default_Ignorable_Code_Point}\x{2800}]");
    for c in (0..=0x10FFFF).filter_map(char::from_u32) {
        let expected = c != ' ' && contains(&classes, c);
        assert_eq!(is_invisible(c), expected, "U+{:04X}", u32::from(c));
    }
}

#[test]
fn a_visible_name_refuses_fillers_blanks_joiners_and_white_space_alone() {
    for ok in [
        "send_email",
        "a b",
        "名前",
        "é-ü",
        "עברית",
        "Ωmega",
        "🚀 launch",
        "x",
    ] {
        assert_eq!(visible_name(ok), Ok(()), "{ok}");
    }
    let refused = [
        ("", "is empty"),
        ("   ", "is only white space"),
        (" acme", "starts or ends with white space"),
        ("acme ", "starts or ends with white space"),
        (
            "send\u{3164}email",
            "contains the control or invisible character U+3164",
        ),
        (
            "\u{115f}",
            "contains the control or invisible character U+115F",
        ),
        (
            "a\u{1160}b",
            "contains the control or invisible character U+1160",
        ),
        (
            "a\u{ffa0}b",
            "contains the control or invisible character U+FFA0",
        ),
        (
            "send\u{2800}",
            "contains the control or invisible character U+2800",
        ),
        (
            "\u{3000}",
            "contains the control or invisible character U+3000",
        ),
        (
            "a\u{a0}b",
            "contains the control or invisible character U+00A0",
        ),
        (
            "\u{2003}",
            "contains the control or invisible character U+2003",
        ),
        (
            "heart\u{fe0f}",
            "contains the control or invisible character U+FE0F",
        ),
        (
            "a\u{34f}b",
            "contains the control or invisible character U+034F",
        ),
        (
            "zero\u{200b}width",
            "contains the control or invisible character U+200B",
        ),
        (
            "a\u{202e}b",
            "contains the control or invisible character U+202E",
        ),
        ("a\nb", "contains the control or invisible character U+000A"),
        (
            "a\u{1b}[2J",
            "contains the control or invisible character U+001B",
        ),
        (
            "tag\u{e0041}",
            "contains the control or invisible character U+E0041",
        ),
    ];
    for (name, problem) in refused {
        assert_eq!(visible_name(name), Err(problem.to_owned()), "{name:?}");
    }
}

#[test]
fn job_and_flow_names_follow_the_one_rule() {
    for name in [
        "send\u{3164}email",
        "\u{2800}",
        "\u{3000}",
        "a\u{200b}b",
        " ",
    ] {
        assert!(job_name(name).is_err(), "job name {name:?} was accepted");
        assert!(flow_name(name).is_err(), "flow name {name:?} was accepted");
    }
}
