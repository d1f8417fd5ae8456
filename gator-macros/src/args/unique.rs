//! `unique_for`, `unique_until` and `debounce`: at most one job per key waits or runs, and a
//! burst of dispatches runs once.

use super::JobOptions;
use super::values::{check_unset, duration_value, string_value};
use syn::{Ident, Meta};

/// `unique_for = "10m"`.
pub(super) fn unique_for(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.unique_for_ms, key)?;
    let zero = "a unique lock that lasts no time would let every duplicate through";
    options.unique_for_ms = Some(duration_value(meta, key, "10m", zero)?);
    Ok(())
}

/// `debounce = "5s"`.
pub(super) fn debounce(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.debounce_ms, key)?;
    let zero = "a debounce of zero waits for nothing: leave `debounce` out";
    options.debounce_ms = Some(duration_value(meta, key, "5s", zero)?);
    Ok(())
}

/// `unique_until = "start"` or `"success"`.
pub(super) fn unique_until(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.unique_until_start, key)?;
    let lit = string_value(meta, key, "start")?;
    options.unique_until_start = Some(match lit.value().as_str() {
        "start" => true,
        "success" => false,
        other => {
            return Err(syn::Error::new(
                lit.span(),
                format!(
                    "`unique_until = {other:?}` is not a moment the lock can end: write \
                     `unique_until = \"start\"` or `\"success\"` (the default)"
                ),
            ));
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::args::tests::parse;
    use quote::quote;

    #[test]
    fn unique_options_are_read() {
        let (options, errors) = parse(quote!(
            unique_for = "10m",
            unique_until = "start",
            debounce = "5s"
        ));
        assert_eq!(errors, 0);
        assert_eq!(options.unique_for_ms, Some(600_000));
        assert_eq!(options.unique_until_start, Some(true));
        assert_eq!(options.debounce_ms, Some(5_000));
        let (options, errors) = parse(quote!(unique_until = "success"));
        assert_eq!((errors, options.unique_until_start), (0, Some(false)));
    }

    #[test]
    fn bad_unique_options_are_each_refused() {
        let cases = [
            quote!(unique_for = "0s"),
            quote!(unique_for = "10"),
            quote!(unique_for = 600),
            quote!(unique_for),
            quote!(unique_until = "finish"),
            quote!(unique_until = start),
            quote!(debounce = "0ms"),
            quote!(debounce = "soon"),
            quote!(unique_for = "1m", unique_for = "2m"),
        ];
        for tokens in cases {
            assert_eq!(parse(tokens.clone()).1, 1, "{tokens}");
        }
    }
}
