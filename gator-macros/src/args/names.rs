//! `queue` and `name`: where a job goes and what it is called, by the naming rules the
//! runtime applies too ([`gator_rules::queue_name`], [`gator_rules::job_name`]).

use super::JobOptions;
use super::values::{check_unset, string_value};
use syn::{Ident, LitStr, Meta};

/// `queue = "high"`.
pub(super) fn queue(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.queue, key)?;
    let queue = string_value(meta, key, "high")?;
    check_queue_name(&queue)?;
    options.queue = Some(queue);
    Ok(())
}

/// `name = "images.resize"`.
pub(super) fn name(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.name, key)?;
    let name = string_value(meta, key, "images.resize")?;
    if let Err(problem) = gator_rules::job_name(&name.value()) {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "invalid job name {:?}: it {problem}; write a wire name like \
                 `name = \"images.resize\"`, or leave `name` out to use the fn name",
                name.value()
            ),
        ));
    }
    options.name = Some(name);
    Ok(())
}

/// The rule `gator_core::store::validate_queue` applies too ([`gator_rules::queue_name`]),
/// checked at compile time so a typo is not found by the first dispatch.
fn check_queue_name(lit: &LitStr) -> syn::Result<()> {
    let name = lit.value();
    gator_rules::queue_name(&name).map_err(|problem| {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid queue name {name:?}: it {problem}; use 1 to 128 characters from A-Z a-z \
                 0-9 _ - . (no braces, colons or spaces; not . or ..)"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::Span;

    fn queue_ok(name: &str) -> bool {
        check_queue_name(&LitStr::new(name, Span::call_site())).is_ok()
    }

    #[test]
    fn queue_names_follow_the_runtime_rule() {
        assert!(queue_ok("default") && queue_ok("mail.high-2_x"));
        assert!(queue_ok(&"q".repeat(128)));
        assert!(!queue_ok(&"q".repeat(129)));
        assert!(!queue_ok("") && !queue_ok("a b") && !queue_ok("{tag}") && !queue_ok("a:b"));
        assert!(!queue_ok("café"));
    }
}
