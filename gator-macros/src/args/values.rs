//! Reading one option's value, whatever the option: that it is given once, and that it is of
//! its kind (a string, a whole number, a duration, a bare flag). Each error says what to write.

use proc_macro2::Span;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Meta};

/// The error for an option given twice.
pub(super) fn check_unset<T>(slot: &Option<T>, key: &Ident) -> syn::Result<()> {
    match slot {
        Some(_) => Err(syn::Error::new(
            key.span(),
            format!("duplicate option `{key}`: give it once"),
        )),
        None => Ok(()),
    }
}

/// The value of `key = "..."`; `example` is a sensible value to show in the error.
pub(super) fn string_value(meta: &Meta, key: &Ident, example: &str) -> syn::Result<LitStr> {
    let expected = format!("`{key} = \"{example}\"`");
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Ok(lit.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                format!("expected a string literal, as in {expected}"),
            )),
        },
        Meta::Path(_) => Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs a value: write {expected}"),
        )),
        Meta::List(_) => Err(syn::Error::new_spanned(meta, format!("write {expected}"))),
    }
}

/// The value of `key = N`, a whole number, and its span; `expected` says what to write.
pub(super) fn int_value(meta: &Meta, key: &Ident, expected: &str) -> syn::Result<(u64, Span)> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) => match int.base10_parse::<u64>() {
                Ok(n) => Ok((n, int.span())),
                Err(_) => Err(syn::Error::new(int.span(), format!("expected {expected}"))),
            },
            other => Err(syn::Error::new_spanned(
                other,
                format!("expected {expected}"),
            )),
        },
        _ => Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        )),
    }
}

/// The span of a bare flag (`critical`); `message` says how to write it if it has a value.
pub(super) fn flag(meta: &Meta, key: &Ident, message: &str) -> syn::Result<Span> {
    if !matches!(meta, Meta::Path(_)) {
        return Err(syn::Error::new_spanned(meta, message));
    }
    Ok(key.span())
}

/// The value of `key = "30s"` in ms; `zero` says why 0 ms is refused.
pub(super) fn duration_value(
    meta: &Meta,
    key: &Ident,
    example: &str,
    zero: &str,
) -> syn::Result<u64> {
    let lit = string_value(meta, key, example)?;
    let ms = parse_duration_ms(&lit.value()).map_err(|e| syn::Error::new(lit.span(), e))?;
    if ms == 0 {
        return Err(syn::Error::new(lit.span(), zero));
    }
    Ok(ms)
}

/// Parses a duration as the command line and the runtime do ([`gator_rules::parse_duration`]:
/// `250ms`, `30s`, `1m30s`, `2h`, `1day`) into milliseconds.
pub(super) fn parse_duration_ms(text: &str) -> Result<u64, String> {
    gator_rules::parse_duration(text.trim())
        .map(gator_rules::millis)
        .map_err(|e| {
            format!(
                "{text:?} is not a duration ({e}): write it as on the command line, as in \"250ms\", \"30s\", \"1m30s\" or \"2h\""
            )
        })
}
