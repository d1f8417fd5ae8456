//! `windows = ["05:00-07:00", ...]`: the daily windows a job may start in, each read by the
//! grammar the runtime reads them with ([`gator_rules::window`]).

use super::JobOptions;
use super::values::check_unset;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Meta};

/// `windows = ["05:00-07:00"]`.
pub(super) fn windows(options: &mut JobOptions, meta: &Meta, key: &Ident) -> syn::Result<()> {
    // Also once refused: a second `windows` is a duplicate either way.
    check_unset(&options.windows_given.then_some(()), key)?;
    options.windows_given = true;
    options.windows = Some(windows_value(meta, key)?);
    Ok(())
}

/// The value of `windows = ["05:00-07:00", ...]`, each window checked by the rule the
/// runtime applies too ([`gator_rules::window`]).
fn windows_value(meta: &Meta, key: &Ident) -> syn::Result<Vec<LitStr>> {
    let expected = "a list of daily windows, as in `windows = [\"05:00-07:00\", \"22:00-02:00\"]`";
    let Meta::NameValue(nv) = meta else {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        ));
    };
    let Expr::Array(array) = &nv.value else {
        return Err(syn::Error::new_spanned(
            &nv.value,
            format!("expected {expected}"),
        ));
    };
    if array.elems.is_empty() {
        return Err(syn::Error::new_spanned(
            array,
            format!("no window given: expected {expected}"),
        ));
    }
    let mut windows = Vec::new();
    let mut errors: Option<syn::Error> = None;
    let mut refuse = |err: syn::Error| match &mut errors {
        Some(errors) => errors.combine(err),
        None => errors = Some(err),
    };
    for elem in &array.elems {
        let Expr::Lit(ExprLit {
            lit: Lit::Str(window),
            ..
        }) = elem
        else {
            refuse(syn::Error::new_spanned(
                elem,
                "expected a window such as \"05:00-07:00\"",
            ));
            continue;
        };
        match gator_rules::window(&window.value()) {
            Ok(_) => windows.push(window.clone()),
            Err(e) => refuse(syn::Error::new(window.span(), e)),
        }
    }
    match errors {
        Some(errors) => Err(errors),
        None => Ok(windows),
    }
}
