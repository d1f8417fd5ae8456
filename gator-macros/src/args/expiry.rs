//! `expires_in` and `on_expire`: a job not started within its time to live never runs.

use super::JobOptions;
use super::values::{check_unset, duration_value, string_value};
use syn::{Ident, Meta};

/// The longest time to live, as the runtime's scheduling horizon: about five years.
const HORIZON_MS: u64 = 5 * 365 * 24 * 3600 * 1000;

/// `expires_in = "10m"`.
pub(super) fn expires_in(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.expires_in_ms, key)?;
    let zero = "a job that expires at once never runs: give it time, as in `expires_in = \"10m\"`";
    let ms = duration_value(meta, key, "10m", zero)?;
    if ms > HORIZON_MS {
        return Err(syn::Error::new_spanned(
            meta,
            "`expires_in` is more than 5 years, past the scheduling horizon: was a time in ms \
             given as seconds? Leave it out for a job that waits as long as it must",
        ));
    }
    options.expires_in_ms = Some(ms);
    Ok(())
}

/// `on_expire = "drop"` or `"dead"`.
pub(super) fn on_expire(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.on_expire_drop, key)?;
    let lit = string_value(meta, key, "drop")?;
    options.on_expire_drop = Some(match lit.value().as_str() {
        "drop" => true,
        "dead" => false,
        other => {
            return Err(syn::Error::new(
                lit.span(),
                format!(
                    "`on_expire = {other:?}` is not what can become of an expired job: write \
                     `on_expire = \"drop\"` (not kept) or `\"dead\"` (kept in the dead set, the \
                     default)"
                ),
            ));
        }
    });
    options.on_expire_span = Some(lit.span());
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::args::tests::parse;
    use quote::quote;

    #[test]
    fn expiry_options_are_read_and_bad_ones_refused() {
        let (options, errors) = parse(quote!(expires_in = "10m", on_expire = "drop"));
        assert_eq!(errors, 0);
        assert_eq!(options.expires_in_ms, Some(600_000));
        assert_eq!(options.on_expire_drop, Some(true));
        for bad in [
            quote!(expires_in = "0s"),
            quote!(expires_in = "soon"),
            quote!(expires_in = "-5m"),
            quote!(expires_in = "6years"),
            quote!(expires_in = "1m", on_expire = "keep"),
            quote!(on_expire = "drop"),
        ] {
            let (_, errors) = parse(bad.clone());
            assert_eq!(errors, 1, "{bad}");
        }
    }
}
