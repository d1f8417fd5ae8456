//! A payload's envelope read without parsing its values: what a worker can still say of a job
//! whose text does not parse whole. serde_json stops at 127 levels of nesting (its recursion
//! limit, 128, counts the value it starts in), so arguments nested deeper (100,000 arrays, as
//! a hostile producer may push) cannot be read by a job, nor the document by anything that
//! parses it whole. This scanner walks the top-level object with a counter instead of
//! recursion: it finds `jid` and `job` (shallow strings, parsed alone) and which field is too
//! deep, in one pass, in constant memory, so the job is dead-lettered with its own jid and
//! name and a reason, and an operator can act on it by its jid.
//!
//! Only failures call it: a payload that parses pays nothing.

/// The deepest nesting of a value serde_json reads: a value nested deeper fails with
/// "recursion limit exceeded".
pub const MAX_DEPTH: usize = 127;

/// What the envelope of a payload too deep to parse says: its jid and name if they could be
/// read, and which field is nested deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// The `jid` field, if it is a string the scan reached.
    pub jid: Option<String>,
    /// The `job` field, if it is a string the scan reached.
    pub job: Option<String>,
    /// The field nested too deep (`args` for the arguments).
    pub field: String,
    /// Whether the text ends before that field closes.
    pub cut_short: bool,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.field.as_str() {
            "args" => write!(f, "arguments nested deeper than {MAX_DEPTH} levels")?,
            field => write!(
                f,
                "field \"{}\" nested deeper than {MAX_DEPTH} levels",
                gator_rules::escape(&gator_rules::cut(field, 100))
            )?,
        }
        if self.cut_short {
            f.write_str(", and the text ends before they close")?;
        }
        Ok(())
    }
}

/// The deepest nesting of the JSON value `text` starts with (`[]` and `{}` are 1, a scalar 0),
/// counted without recursion; what follows the value is not read.
pub fn nesting(text: &str) -> usize {
    let mut scanner = Scanner { text, at: 0 };
    scanner.white_space();
    scanner.value().depth
}

/// `text`'s envelope, if one of its top-level fields is nested deeper than [`MAX_DEPTH`]:
/// `None` for any other text (not an object, or not too deep: another reason it does not parse).
pub fn too_deep(text: &str) -> Option<TooDeep> {
    let mut scanner = Scanner { text, at: 0 };
    let mut found = TooDeep {
        jid: None,
        job: None,
        field: String::new(),
        cut_short: false,
    };
    scanner.white_space();
    if !scanner.eat(b'{') {
        return None;
    }
    while let Some((key, value, skipped)) = scanner.field() {
        if found.field.is_empty() && skipped.depth > MAX_DEPTH {
            found.field = key.clone();
            found.cut_short = !skipped.closed;
        }
        let slot = match key.as_str() {
            "jid" => &mut found.jid,
            "job" => &mut found.job,
            _ => continue,
        };
        if slot.is_none() {
            *slot = serde_json::from_str(value).ok();
        }
    }
    (!found.field.is_empty()).then_some(found)
}

/// A value skipped: how deep it nests, and whether it closed before the text ended.
#[derive(Clone, Copy)]
struct Skipped {
    depth: usize,
    closed: bool,
}

/// A cursor over JSON text that skips values by counting brackets.
struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn white_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let ate = self.peek() == Some(byte);
        self.at += usize::from(ate);
        ate
    }

    /// Past the string starting here (at its quote); false if the text ends inside it.
    fn string(&mut self) -> bool {
        self.at += 1;
        while let Some(byte) = self.peek() {
            self.at += if byte == b'\\' { 2 } else { 1 };
            if byte == b'"' {
                return true;
            }
        }
        false
    }

    /// Past the value starting here.
    fn value(&mut self) -> Skipped {
        let (mut depth, mut deepest) = (0usize, 0usize);
        let end = |depth, closed| Skipped { depth, closed };
        while let Some(byte) = self.peek() {
            match byte {
                b'"' => {
                    if !self.string() {
                        return end(deepest, false);
                    }
                    if depth == 0 {
                        return end(deepest, true);
                    }
                    continue;
                }
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        return end(deepest, true);
                    }
                }
                b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => {
                    return end(deepest, true);
                }
                _ => {}
            }
            self.at += 1;
        }
        end(deepest, depth == 0)
    }

    /// The next field of the object being read: its key, its value's text, and whether the
    /// value closed; `None` at the object's end or where the text stops being one.
    fn field(&mut self) -> Option<(String, &'a str, Skipped)> {
        self.white_space();
        self.eat(b',');
        self.white_space();
        let start = self.at;
        if self.peek() != Some(b'"') || !self.string() {
            return None;
        }
        let key = serde_json::from_str(&self.text[start..self.at]).ok()?;
        self.white_space();
        if !self.eat(b':') {
            return None;
        }
        self.white_space();
        let start = self.at;
        let skipped = self.value();
        let value = self.text.get(start..self.at.min(self.text.len()))?;
        Some((key, value, skipped))
    }
}

#[cfg(test)]
#[path = "envelope_tests.rs"]
mod tests;
