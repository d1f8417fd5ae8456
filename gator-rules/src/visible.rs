//! The one rule for every name or key a user gives Gator (job names, fair keys, limit keys,
//! rate limiters, overlap keys, reply keys, unique keys, periodic entries' names): it holds
//! only characters that show as themselves. A character that shows as nothing, as a space, or
//! changes what is around it would make two names look alike, hide what a name says, or forge
//! a line where the name is printed.
//!
//! The table of default-ignorable code points is written out here rather than taken from a
//! crate: it is 17 ranges that Unicode keeps stable (new ones are only ever assigned inside
//! them), this crate has no dependencies because a proc-macro crate links it, and the crates
//! that carry the property (`icu_properties`) bring a dozen more. A test checks the table, and
//! every class below, against regex-syntax's Unicode tables, character by character.

use crate::is_hidden;

/// Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 16): fillers,
/// joiners, variation selectors, tags and the ranges reserved for more of them. A renderer
/// shows none of them.
const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

/// The Braille pattern blank: a symbol, not white space, that every font draws empty.
const BRAILLE_BLANK: char = '\u{2800}';

/// Whether a name may not hold `c`: a control, format or separator character ([`is_hidden`]),
/// a default-ignorable code point (the Hangul fillers U+115F, U+1160, U+3164, U+FFA0,
/// variation selectors, ...), or a character that looks blank: any white space but the ASCII
/// space (U+00A0, U+3000, ...), and the Braille blank U+2800.
pub fn is_invisible(c: char) -> bool {
    if c.is_ascii() {
        // The common case costs one comparison: of ASCII, only the controls are invisible.
        return c.is_ascii_control();
    }
    let code = u32::from(c);
    is_hidden(c)
        || c.is_whitespace()
        || c == BRAILLE_BLANK
        || DEFAULT_IGNORABLE
            .iter()
            .any(|&(low, high)| (low..=high).contains(&code))
}

/// A name or key as a user gives it: not empty, every character shows as itself
/// ([`is_invisible`]), and no space at either end (`" acme"` would look like `"acme"`), so
/// none is white space alone. The answer completes "invalid fair key ...: it ...".
pub fn visible_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".to_owned());
    }
    if let Some(c) = name.chars().find(|c| is_invisible(*c)) {
        return Err(format!(
            "contains the control or invisible character U+{:04X}",
            u32::from(c)
        ));
    }
    if name.bytes().all(|b| b == b' ') {
        return Err("is only white space".to_owned());
    }
    if name.starts_with(' ') || name.ends_with(' ') {
        return Err("starts or ends with white space".to_owned());
    }
    Ok(())
}

#[cfg(test)]
#[path = "visible_tests.rs"]
mod tests;
