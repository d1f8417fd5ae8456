//! How the CLI prints: tables of aligned columns under a header, no borders, so output reads
//! well in a terminal and still greps well (one row per line); JSON; ages and times.

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
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    writeln!(out, "{text}")
}

/// A record's named fields, in order: one `name  value` line each, names padded to one width
/// (a string printed bare, any other value as JSON), or with `json` one JSON object (the
/// `job show` and `job position` output).
pub fn print_fields(
    out: &mut impl Write,
    fields: Vec<(&str, serde_json::Value)>,
    json: bool,
) -> std::io::Result<()> {
    if json {
        let object: serde_json::Map<String, serde_json::Value> =
            fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        return writeln!(out, "{}", serde_json::Value::Object(object));
    }
    for (name, value) in fields {
        let text = match value {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
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
    format!("{}{wait}", humantime::format_rfc3339_millis(at))
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
