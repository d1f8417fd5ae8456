//! `retries`, `backoff`, `retry` and `timeout`: how long one attempt may run, and what
//! happens after it fails.

use super::values::{check_unset, duration_value, parse_duration_ms};
use super::{Backoff, JobOptions};
use syn::{Expr, ExprLit, Ident, Lit, Meta, Path};

/// `retries = 5`.
pub(super) fn retries(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.retries, key)?;
    options.retries = Some(retries_value(meta, key)?);
    Ok(())
}

/// `backoff = ["1s", "30s"]` or `backoff = my_backoff`.
pub(super) fn backoff(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.backoff, key)?;
    options.backoff = Some(backoff_value(meta, key)?);
    Ok(())
}

/// `retry = my_strategy`.
pub(super) fn retry(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.retry, key)?;
    options.retry = Some(strategy_value(meta, key)?);
    Ok(())
}

/// `timeout = "30s"`.
pub(super) fn timeout(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    check_unset(&options.timeout_ms, key)?;
    let zero = "a timeout of zero would fail every attempt";
    options.timeout_ms = Some(duration_value(meta, key, "30s", zero)?);
    Ok(())
}

/// The value of `retries = N`.
fn retries_value(meta: &Meta, key: &Ident) -> syn::Result<u32> {
    let expected =
        "a whole number, as in `retries = 5` (0 sends a failed job straight to the dead set)";
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) => int
                .base10_parse::<u32>()
                .map_err(|_| syn::Error::new(int.span(), format!("expected {expected}"))),
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

/// The value of `retry = path::to_fn`.
fn strategy_value(meta: &Meta, key: &Ident) -> syn::Result<Path> {
    match meta {
        Meta::NameValue(nv) => match &nv.value {
            Expr::Path(path) if path.qself.is_none() => Ok(path.path.clone()),
            other => Err(syn::Error::new_spanned(
                other,
                "`retry` needs the path of a `fn(&gator_core::retry::RetryContext) -> \
                 gator_core::retry::RetryDecision`",
            )),
        },
        _ => Err(syn::Error::new(
            key.span(),
            "`retry` needs the path of a `fn(&gator_core::retry::RetryContext) -> \
             gator_core::retry::RetryDecision`, as in `retry = my_strategy`",
        )),
    }
}

/// The value of `backoff = [...]` (delays) or `backoff = path::to_fn`.
fn backoff_value(meta: &Meta, key: &Ident) -> syn::Result<Backoff> {
    let expected = "a list of delays, as in `backoff = [\"1s\", \"30s\", \"5m\"]`, or the path of a \
                    `fn(u32) -> std::time::Duration` that gets the number of failures so far";
    let Meta::NameValue(nv) = meta else {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        ));
    };
    match &nv.value {
        Expr::Path(path) if path.qself.is_none() => Ok(Backoff::Path(path.path.clone())),
        Expr::Array(array) if !array.elems.is_empty() => {
            let mut delays = Vec::new();
            for elem in &array.elems {
                let ms = match elem {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) => {
                        parse_duration_ms(&s.value()).map_err(|e| syn::Error::new(s.span(), e))?
                    }
                    Expr::Lit(ExprLit {
                        lit: Lit::Int(i), ..
                    }) => i
                        .base10_parse::<u64>()
                        .map_err(|e| syn::Error::new(i.span(), e))?
                        .saturating_mul(1000),
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "expected a delay such as \"30s\" or a number of seconds",
                        ));
                    }
                };
                delays.push(ms);
            }
            Ok(Backoff::List(delays))
        }
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected {expected}"),
        )),
    }
}
