//! How the CLI prints: tables of aligned columns under a header, no borders, so output reads
//! well in a terminal and still greps well (one row per line); JSON; ages and times.
//!
//! Every text the CLI prints from Redis goes through one escaping function,
//! [`gator_rules::escape`] (the worker's log uses it too): a job name, an error, a key or a
//! process id that a hostile producer stored with terminal escapes, line breaks or
//! bidirectional controls is shown as `\u{1b}`, `\n`, `\u{202e}`, and can neither forge a line
//! nor act on the terminal. Table cells are escaped as they are added ([`add_row`]), fields as
//! they are printed ([`print_fields`]), JSON as it is written ([`json_text`]); a line written
//! by hand escapes its stored parts with [`gator_rules::escape`].

use comfy_table::{ContentArrangement, Table, presets};
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An empty table with `header`.
pub fn new(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().copied());
    table
}

/// Adds a row of `cells` to `table`, each escaped ([`gator_rules::escape`]): a cell is text
/// from Redis, so one with a line break would otherwise add a line to the table.
pub fn add_row<S: AsRef<str>>(table: &mut Table, cells: impl IntoIterator<Item = S>) {
    table.add_row(
        cells
            .into_iter()
            .map(|cell| gator_rules::escape(cell.as_ref()).into_owned()),
    );
}

/// Writes `table` without the padding of its outer edges (every line's first space, and the
/// trailing ones).
pub fn print(out: &mut impl Write, table: &Table) -> std::io::Result<()> {
    for line in table.lines() {
        let line = line.strip_prefix(' ').unwrap_or(&line);
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// `value` as pretty JSON on its own line (the `--json` of every listing).
pub fn print_json(out: &mut impl Write, value: &impl serde::Serialize) -> std::io::Result<()> {
    writeln!(out, "{}", json_text(value, true)?)
}

/// `value` as JSON text, pretty or on one line, with every hidden character
/// ([`gator_rules::is_hidden`]) written as a JSON escape (`\u202e`): the same value, safe to
/// print. serde_json escapes the controls below U+0020 inside strings, but writes DEL, the C1
/// controls (U+009B is a terminal's CSI) and the format and separator characters (U+202E
/// reverses what follows) as they are. Outside strings it writes only ASCII, and its line
/// breaks are the layout's, so a line break is never escaped here.
pub fn json_text(value: &impl serde::Serialize, pretty: bool) -> std::io::Result<String> {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .map_err(std::io::Error::other)?;
    let hidden = |c: char| c != '\n' && gator_rules::is_hidden(c);
    if !text.chars().any(hidden) {
        return Ok(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !hidden(c) {
            safe.push(c);
            continue;
        }
        for unit in c.encode_utf16(&mut [0; 2]) {
            safe.push_str(&format!("\\u{unit:04x}"));
        }
    }
    Ok(safe)
}

/// A record's named fields, in order: one `name  value` line each, names padded to one width
/// (a string printed bare, escaped, any other value as JSON), or with `json` one JSON object
/// (the `job show` and `job position` output).
pub fn print_fields(
    out: &mut impl Write,
    fields: Vec<(&str, serde_json::Value)>,
    json: bool,
) -> std::io::Result<()> {
    if json {
        let object: serde_json::Map<String, serde_json::Value> =
            fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        return writeln!(out, "{}", json_text(&object, false)?);
    }
    for (name, value) in fields {
        let text = match value {
            serde_json::Value::String(s) => gator_rules::escape(&s).into_owned(),
            other => json_text(&other, false)?,
        };
        writeln!(out, "{name:<9} {text}")?;
    }
    Ok(())
}

/// A duration in ms as people read it: `850ms`, `12.3s`, `4m 05s`, `3h 12m`, `2d 4h`.
pub fn age(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m {:02}s", ms / 60_000, ms % 60_000 / 1000),
        3_600_000..86_400_000 => format!("{}h {:02}m", ms / 3_600_000, ms % 3_600_000 / 60_000),
        _ => format!("{}d {}h", ms / 86_400_000, ms % 86_400_000 / 3_600_000),
    }
}

/// A moment as people and scripts read it: RFC 3339 in UTC, to the ms.
pub fn time(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// A limiter's next start: "now", or the time and how far off it is.
pub fn next_start(at_ms: Option<u64>) -> String {
    let Some(at_ms) = at_ms else {
        return "now".to_owned();
    };
    let at = UNIX_EPOCH + Duration::from_millis(at_ms);
    let wait = at
        .duration_since(SystemTime::now())
        .map(|d| format!(" (in {} ms)", d.as_millis()))
        .unwrap_or_default();
    format!("{}{wait}", time(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_people_say_them() {
        assert_eq!(age(850), "850ms");
        assert_eq!(age(12_345), "12.3s");
        assert_eq!(age(245_000), "4m 05s");
        assert_eq!(age(3 * 3_600_000 + 12 * 60_000), "3h 12m");
        assert_eq!(age(2 * 86_400_000 + 4 * 3_600_000), "2d 4h");
    }

    #[test]
    fn fields_print_as_aligned_lines_or_one_object() {
        let fields = || vec![("jid", "j1".into()), ("position", 3.into())];
        let mut out = Vec::new();
        print_fields(&mut out, fields(), false).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "jid       j1\nposition  3\n"
        );
        let mut out = Vec::new();
        print_fields(&mut out, fields(), true).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"jid\":\"j1\",\"position\":3}\n"
        );
    }

    #[test]
    fn stored_text_is_printed_escaped_in_cells_fields_and_json() {
        let hostile = "a\u{1b}[2J\nforged\u{202e}\u{9b}";
        let mut table = new(&["job"]);
        add_row(&mut table, [hostile]);
        let mut out = Vec::new();
        print(&mut out, &table).unwrap();
        print_fields(&mut out, vec![("error", hostile.into())], false).unwrap();
        let json = json_text(&serde_json::json!({ "job": hostile }), true).unwrap();
        let text = String::from_utf8(out).unwrap() + &json;
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "job",
                "a\\u{1b}[2J\\nforged\\u{202e}\\u{9b}",
                "error     a\\u{1b}[2J\\nforged\\u{202e}\\u{9b}",
                "{",
                "  \"job\": \"a\\u001b[2J\\nforged\\u202e\\u009b\"",
                "}",
            ]
        );
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["job"], hostile, "the JSON holds the same text");
    }

    #[test]
    fn columns_line_up_and_lines_end_without_spaces() {
        let mut table = new(&["queue", "size"]);
        table.add_row(["mail", "3"]);
        table.add_row(["default-long", "12"]);
        let mut out = Vec::new();
        print(&mut out, &table).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            ["queue         size", "mail          3", "default-long  12"]
        );
    }
}
