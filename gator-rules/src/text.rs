//! Text from outside as Gator logs, stores and shows it: hidden characters written as escapes,
//! long texts cut with a note.

/// Whether `c` is a character that does not show as itself: a control character (Unicode
/// category Cc), a format character (Cf: zero-width spaces and joiners, bidirectional
/// embeddings, overrides and isolates, the byte order mark, invisible operators, tags), or a
/// line or paragraph separator.
pub fn is_hidden(c: char) -> bool {
    // The Cf ranges of Unicode 16, with the separators U+2028 and U+2029.
    const HIDDEN: &[(u32, u32)] = &[
        (0x00AD, 0x00AD),
        (0x0600, 0x0605),
        (0x061C, 0x061C),
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x2028, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFEFF, 0xFEFF),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ];
    let code = u32::from(c);
    c.is_control()
        || HIDDEN
            .iter()
            .any(|&(low, high)| (low..=high).contains(&code))
}

/// `text` with every [`is_hidden`] character and backslash written as an escape (`\n`,
/// `\u{202e}`, `\\`), so that text from outside, logged or shown in a terminal, can neither
/// start a new line, send a terminal escape, nor reorder what is around it.
pub fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    // Printable ASCII without a backslash, as nearly every jid and job name is: nothing to
    // escape, known from its bytes (the worker escapes two texts per job for its span).
    let printable = |b: &u8| (b' '..=b'~').contains(b) && *b != b'\\';
    if text.bytes().all(|b| printable(&b)) {
        return std::borrow::Cow::Borrowed(text);
    }
    if !text.chars().any(|c| is_hidden(c) || c == '\\') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if is_hidden(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The most bytes of an error text Gator stores, logs or serves: a job's error, a status
/// record's. Enough for a message and a backtrace's top; an error that quotes a 50 MB argument
/// is cut here instead of being stored in every retry, logged and served.
pub const MAX_ERROR_TEXT: usize = 4096;

/// `text` cut to at most `max` bytes (at a character boundary), followed by a note saying how
/// many bytes were cut; `text` itself if it fits.
pub fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}… [{} more bytes cut]",
        &text[..end],
        text.len() - end
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_writes_hidden_characters_and_backslashes_as_escapes() {
        assert!(matches!(
            escape("plain"),
            std::borrow::Cow::Borrowed("plain")
        ));
        assert_eq!(
            escape("job\n2026-11-26 INFO forged"),
            "job\\n2026-11-26 INFO forged"
        );
        assert_eq!(escape("\u{1b}[2J\u{202e}x\\"), "\\u{1b}[2J\\u{202e}x\\\\");
    }

    #[test]
    fn cut_keeps_short_text_and_cuts_long_text_at_a_char_boundary_with_a_note() {
        assert!(matches!(
            cut("short", 10),
            std::borrow::Cow::Borrowed("short")
        ));
        assert_eq!(cut("abcdef", 4), "abcd… [2 more bytes cut]");
        // 'é' is two bytes: a cut through it moves back before it.
        assert_eq!(cut("aé", 2), "a… [2 more bytes cut]");
        let huge = "x".repeat(50 << 20);
        assert!(cut(&huge, MAX_ERROR_TEXT).len() < MAX_ERROR_TEXT + 40);
    }
}
