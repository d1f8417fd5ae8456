//! Naming rules: what a queue, a job or a flow-control name may be called. Each answers `Err(problem)` with a
//! lowercase phrase that completes "invalid queue name ...: it ...", so every side words its
//! errors alike.

use crate::visible_name;

/// The longest queue name, in bytes.
pub const MAX_QUEUE_NAME: usize = 128;
/// The longest job (wire) name, in bytes: names are short identifiers; more is a mistake.
pub const MAX_JOB_NAME: usize = 256;

/// A queue name: 1 to 128 characters from `A-Z a-z 0-9 _ - .`, and not `.` or `..`.
///
/// The name goes inside a key's hash tag (`gator:{name}:queue`), so no braces or colons; and
/// into the dashboard's relative links (`queues/{name}`), where `.` and `..` would resolve to
/// another page.
pub fn queue_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".to_owned());
    }
    if name.len() > MAX_QUEUE_NAME {
        return Err(format!(
            "is {} bytes long (at most {MAX_QUEUE_NAME})",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_-.".contains(*c)))
    {
        return Err(format!("contains {c:?}"));
    }
    if name == "." || name == ".." {
        return Err("is a path segment (`.` or `..`), which links would resolve".to_owned());
    }
    Ok(())
}

/// A job's wire name: 1 to 256 bytes that show as themselves ([`visible_name`]: no control,
/// format, default-ignorable or blank-looking character, no space at either end). Such
/// characters forge log lines, hide what a name says, or make two names look alike.
pub fn job_name(name: &str) -> Result<(), String> {
    if name.len() > MAX_JOB_NAME {
        return Err(format!(
            "is {} bytes long (at most {MAX_JOB_NAME})",
            name.len()
        ));
    }
    visible_name(name)
}

/// The longest limit key, rate limiter name or overlap key, in bytes.
pub const MAX_FLOW_NAME: usize = 128;

/// A name flow control keeps in its keys and passes to its scripts: a limit key, a rate
/// limiter's name, a fair key, an overlap key. 1 to 128 bytes that show as themselves
/// ([`visible_name`]; the scripts use a control character as a separator).
pub fn flow_name(name: &str) -> Result<(), String> {
    if name.len() > MAX_FLOW_NAME {
        return Err(format!("is {} bytes long", name.len()));
    }
    visible_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names_are_plain_identifiers_but_not_dot_segments() {
        for ok in ["default", "mail.high", "a-b_c", "...", ".x", "x.."] {
            assert_eq!(queue_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", ".", "..", "a b", "a{b}", "a:b", "é", &"q".repeat(129)] {
            assert!(queue_name(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(queue_name("..").unwrap_err().contains("path segment"));
    }

    #[test]
    fn job_names_refuse_control_bidi_and_zero_width_characters() {
        for ok in ["send_email", "images.resize", "Mailer::Send", "é-ü", "名前"] {
            assert_eq!(job_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            " padded",
            "a\nb",
            "a\u{1b}[31mred",
            "a\u{202e}gnp.exe",
            "a\u{2066}b",
            "zero\u{200b}width",
            "bom\u{feff}",
            "tag\u{e0041}",
            "line\u{2028}sep",
            "c1\u{85}",
        ] {
            assert!(job_name(bad).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(
            job_name("a\u{202e}b").unwrap_err(),
            "contains the control or invisible character U+202E"
        );
        assert!(job_name(&"j".repeat(257)).is_err());
        assert!(job_name(&"j".repeat(256)).is_ok());
    }

    #[test]
    fn flow_names_are_1_to_128_bytes_that_show_as_themselves() {
        for ok in ["email", "east", "a b", "名前", &"é".repeat(64)] {
            assert_eq!(flow_name(ok), Ok(()), "{ok}");
        }
        assert_eq!(flow_name(""), Err("is empty".to_owned()));
        assert_eq!(
            flow_name(&"r".repeat(129)),
            Err("is 129 bytes long".to_owned())
        );
        assert_eq!(
            flow_name("a\tb"),
            Err("contains the control or invisible character U+0009".to_owned())
        );
        assert!(flow_name("a\u{1f}b").is_err() && flow_name("x\u{85}").is_err());
    }
}
