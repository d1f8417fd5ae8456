//! What a listing shows of a job's data: its arguments, its error and text that did not parse,
//! each cut to a bounded size. A listing shows many jobs and the dashboard fetches it every two
//! seconds, so one job that carries megabytes must not make every answer carry them; the job's
//! own page (or a caller that asks) gets them whole.

use serde_json::Value;

/// The most bytes of a job's arguments (as JSON text) a listing shows.
pub const ARGS_PREVIEW: usize = 1024;

/// `args` as a listing shows them: as they are if their JSON text fits [`ARGS_PREVIEW`], else
/// a string holding the start of that text and a note of how many bytes were cut.
pub fn args(args: Value) -> Value {
    args_within(args, ARGS_PREVIEW)
}

/// [`args`] with a limit of `max` bytes (a job's own page shows more than a listing).
pub fn args_within(args: Value, max: usize) -> Value {
    let text = args.to_string();
    if text.len() <= max {
        return args;
    }
    Value::String(gator_rules::cut(&text, max).into_owned())
}

/// Whether [`args`] cut these arguments.
pub fn is_cut(args: &Value) -> bool {
    !args.is_array()
        && args
            .as_str()
            .is_some_and(|s| s.ends_with("more bytes cut]"))
}

/// An error text as anything shows it: at most [`gator_rules::MAX_ERROR_TEXT`] bytes.
pub fn error(text: &str) -> String {
    gator_rules::cut(text, gator_rules::MAX_ERROR_TEXT).into_owned()
}

/// Text that did not parse as a payload, as a listing shows it: at most [`ARGS_PREVIEW`]
/// bytes.
pub fn text(text: &str) -> String {
    gator_rules::cut(text, ARGS_PREVIEW).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_args_stay_whole_and_large_ones_become_a_cut_string() {
        let small = json!(["a@b.c", 3]);
        assert_eq!(args(small.clone()), small);
        assert!(!is_cut(&small));
        let large = json!(["x".repeat(50_000)]);
        let shown = args(large);
        let text = shown.as_str().expect("a string preview");
        assert!(text.len() < ARGS_PREVIEW + 40, "{}", text.len());
        assert!(text.starts_with("[\"xxx"), "{text}");
        assert!(is_cut(&shown));
    }
}
