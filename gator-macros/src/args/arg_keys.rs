//! The options that name one of the job's arguments (`limit_key = region`, `fair_key =
//! tenant`, `overlap_key = account`): reading the name, and finding that argument among the fn's once it is checked.

use super::JobOptions;
use crate::validate::{Input, JobFn};
use syn::ext::IdentExt;
use syn::{Expr, ExprLit, FnArg, Ident, Lit, Meta, Pat};

impl JobOptions {
    /// Finds the wire argument `limit_key` names among the job fn's arguments (its
    /// parameters other than `Context` and `State`); an error if there is none.
    pub fn resolve_limit_key(&mut self, job: &JobFn) -> syn::Result<()> {
        if let Some(key) = &self.limit_key {
            self.limit_key_index = Some(arg_index(job, "limit_key", key)?);
        }
        Ok(())
    }

    /// Finds the wire argument `fair_key` names, as [`JobOptions::resolve_limit_key`] does.
    pub fn resolve_fair_key(&mut self, job: &JobFn) -> syn::Result<()> {
        if let Some(key) = &self.fair_key {
            self.fair_key_index = Some(arg_index(job, "fair_key", key)?);
        }
        Ok(())
    }

    /// Finds the wire argument `overlap_key` names, as [`JobOptions::resolve_limit_key`] does.
    pub fn resolve_overlap_key(&mut self, job: &JobFn) -> syn::Result<()> {
        if let Some(key) = &self.overlap_key {
            self.overlap_key_index = Some(arg_index(job, "overlap_key", key)?);
        }
        Ok(())
    }
}

/// The index among the job fn's wire arguments (its parameters other than `Context` and
/// `State`) of the one `key` names, for option `option`; an error if there is none.
fn arg_index(job: &JobFn, option: &str, key: &Ident) -> syn::Result<usize> {
    let params = &job.params;
    if let Some(index) = params.iter().position(|p| p.ident.unraw() == key.unraw()) {
        return Ok(index);
    }
    let names: Vec<String> = params
        .iter()
        .map(|p| format!("`{}`", p.ident.unraw()))
        .collect();
    let instead = if names.is_empty() {
        format!(
            "the job takes no argument to key by: leave `{option}` out (a dispatch can still \
             set a key with `.{option}(..)`)"
        )
    } else {
        format!("name one of its arguments: {}", names.join(", "))
    };
    // A `Context` or `State` parameter has a name too, but comes from the worker: it is
    // not stored with the job, so the queue cannot read a key from it.
    let message = match worker_param_named(job, key) {
        Some(kind) => format!(
            "`{option} = {key}` names the job's {kind} parameter, which the worker supplies \
             and is not stored with the job; {instead}"
        ),
        None => format!("`{option} = {key}` names no argument of the job; {instead}"),
    };
    Err(syn::Error::new(key.span(), message))
}

/// The value of an option that names one of the job's arguments (`overlap_key = account`).
pub(super) fn arg_name_value(meta: &Meta, key: &Ident, example: &str) -> syn::Result<Ident> {
    let expected = format!("the name of one of the job's arguments, as in `{key} = {example}`");
    let Meta::NameValue(nv) = meta else {
        return Err(syn::Error::new(
            key.span(),
            format!("`{key}` needs {expected}"),
        ));
    };
    match &nv.value {
        Expr::Path(path) if path.path.get_ident().is_some() => {
            // Checked just above: the path is one identifier.
            Ok(path.path.get_ident().cloned().expect("an identifier"))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(name),
            ..
        }) => Err(syn::Error::new(
            name.span(),
            format!(
                "`{key}` names an argument, not a string: write it without quotes, as in \
                 `{key} = {}`",
                syn::parse_str::<Ident>(&name.value())
                    .map_or(example.to_owned(), |i| i.to_string())
            ),
        )),
        other => Err(syn::Error::new_spanned(
            other,
            format!("expected {expected}"),
        )),
    }
}

/// What the `Context` or `State<T>` parameter that binds `name` is, as in "`Context`", if
/// one does.
fn worker_param_named(job: &JobFn, name: &Ident) -> Option<&'static str> {
    // A checked fn has one input per parameter, in order.
    let typed = job.item.sig.inputs.iter().filter_map(|arg| match arg {
        FnArg::Typed(arg) => Some(arg),
        FnArg::Receiver(_) => None,
    });
    typed.zip(&job.inputs).find_map(|(arg, input)| {
        let kind = match input {
            Input::Arg(_) => return None,
            Input::Context => "`Context`",
            Input::State(_) => "`State`",
        };
        binds(&arg.pat, name).then_some(kind)
    })
}

/// Whether pattern `pat` binds `name` (`ctx`, `State(db)`, `State((a, b))`...).
fn binds(pat: &Pat, name: &Ident) -> bool {
    match pat {
        Pat::Ident(pat) => {
            pat.ident.unraw() == name.unraw()
                || pat.subpat.as_ref().is_some_and(|(_, sub)| binds(sub, name))
        }
        Pat::TupleStruct(pat) => pat.elems.iter().any(|p| binds(p, name)),
        Pat::Tuple(pat) => pat.elems.iter().any(|p| binds(p, name)),
        Pat::Struct(pat) => pat.fields.iter().any(|f| binds(&f.pat, name)),
        Pat::Paren(pat) => binds(&pat.pat, name),
        Pat::Reference(pat) => binds(&pat.pat, name),
        Pat::Type(pat) => binds(&pat.pat, name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Errors;
    use crate::args::tests::parse;
    use proc_macro2::TokenStream;
    use quote::quote;

    /// `fn #item` checked as `#[job]` would, and the `limit_key` error it gets, if any.
    fn limit_key_error(key: TokenStream, item: TokenStream) -> Option<String> {
        let mut errors = Errors::default();
        let mut options = JobOptions::parse(quote!(limit_key = #key), &mut errors);
        let job = crate::validate::job_fn(syn::parse2(item).unwrap(), &mut errors).unwrap();
        assert_eq!(errors.len(), 0);
        match options.resolve_limit_key(&job) {
            Ok(()) => {
                assert!(options.limit_key_index.is_some());
                None
            }
            Err(err) => {
                assert!(options.limit_key_index.is_none());
                Some(err.to_string())
            }
        }
    }

    #[test]
    fn the_fair_key_is_a_wire_argument_by_name() {
        let item = quote! { async fn report(ctx: Context, tenant: String, day: u32) {} };
        let resolve = |key: TokenStream| {
            let mut errors = Errors::default();
            let mut options = JobOptions::parse(quote!(fair_key = #key), &mut errors);
            let job =
                crate::validate::job_fn(syn::parse2(item.clone()).unwrap(), &mut errors).unwrap();
            options
                .resolve_fair_key(&job)
                .map(|()| options.fair_key_index)
                .map_err(|e| e.to_string())
        };
        assert_eq!(resolve(quote!(tenant)), Ok(Some(0)));
        assert_eq!(resolve(quote!(day)), Ok(Some(1)));
        let err = resolve(quote!(tennant)).unwrap_err();
        assert!(err.contains("names no argument of the job"), "{err}");
        assert!(err.contains("fair_key"), "{err}");
    }

    #[test]
    fn the_limit_key_is_a_wire_argument_by_name() {
        let item = quote! {
            async fn sync(
                ctx: Context,
                State(db): State<Db>,
                batch: u64,
                r#type: String,
                _: State<u8>,
            ) {}
        };
        let index = |key: TokenStream| {
            let mut errors = Errors::default();
            let mut options = JobOptions::parse(quote!(limit_key = #key), &mut errors);
            let job =
                crate::validate::job_fn(syn::parse2(item.clone()).unwrap(), &mut errors).unwrap();
            options
                .resolve_limit_key(&job)
                .map(|()| options.limit_key_index)
        };
        // The index among the wire arguments: `Context` and `State` are not among them.
        assert_eq!(index(quote!(batch)).unwrap(), Some(0));
        assert_eq!(index(quote!(r#type)).unwrap(), Some(1));

        let err = limit_key_error(quote!(ctx), item.clone()).unwrap();
        assert!(err.contains("`Context` parameter"), "{err}");
        assert!(err.contains("`batch`, `type`"), "{err}");
        let err = limit_key_error(quote!(db), item.clone()).unwrap();
        assert!(err.contains("`State` parameter"), "{err}");
        let err = limit_key_error(quote!(regoin), item).unwrap();
        assert!(err.contains("names no argument of the job"), "{err}");
        let err = limit_key_error(
            quote!(region),
            quote!(
                fn tick(ctx: Context) {}
            ),
        )
        .unwrap();
        assert!(err.contains("no argument to key by"), "{err}");
        assert_eq!(
            limit_key_error(
                quote!(n),
                quote!(
                    fn one(n: u32) {}
                )
            ),
            None
        );
    }

    #[test]
    fn no_overlap_and_its_key_are_read() {
        let (options, errors) = parse(quote!(no_overlap));
        assert_eq!(errors, 0);
        assert!(options.no_overlap.is_some() && options.overlap_key.is_none());
        let (options, errors) = parse(quote!(no_overlap, overlap_key = account));
        assert_eq!(errors, 0);
        assert_eq!(
            options.overlap_key.map(|k| k.to_string()).as_deref(),
            Some("account")
        );
        let err = |item: TokenStream| {
            let mut errors = Errors::default();
            let mut options = JobOptions::parse(quote!(overlap_key = account), &mut errors);
            let job = crate::validate::job_fn(syn::parse2(item).unwrap(), &mut errors).unwrap();
            options
                .resolve_overlap_key(&job)
                .map(|()| options.overlap_key_index)
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            err(quote!(
                fn f(day: u32, account: String) {}
            )),
            Ok(Some(1))
        );
        let message = err(quote!(
            fn f(ctx: Context) {}
        ))
        .unwrap_err();
        assert!(message.contains("`.overlap_key(..)`"), "{message}");
        let message = err(quote!(
            fn f(acount: String) {}
        ))
        .unwrap_err();
        assert!(
            message.contains("`overlap_key = account` names no argument"),
            "{message}"
        );
    }
}
